package scheduler

import (
	"context"
	"fmt"

	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
)

// Volumes, as kube-scheduler's VolumeBinding plugin has them: a pod waits
// while a claim it mounts is missing, or unbound in a class that binds at
// once (the volume controller binds it); a bound claim's volume pins the
// pod to the nodes its nodeAffinity names; a claim of a
// WaitForFirstConsumer class goes where the pod goes, the node named on
// the claim (volume.kubernetes.io/selected-node) before the pod is bound,
// and the provisioner makes its volume there.

// VolumeLister finds the claims, volumes and classes pods name.
type VolumeLister interface {
	Claim(namespace, name string) (*api.PersistentVolumeClaim, bool)
	Volume(name string) (*api.PersistentVolume, bool)
	Class(name string) (*api.StorageClass, bool)
}

// ClaimWriter writes a claim (its selected node).
type ClaimWriter interface {
	UpdateClaim(ctx context.Context, pvc *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error)
}

// volumeListers are the informers' listers.
type volumeListers struct {
	claims  *cache.Lister[api.PersistentVolumeClaim, *api.PersistentVolumeClaim]
	volumes *cache.Lister[api.PersistentVolume, *api.PersistentVolume]
	classes *cache.Lister[api.StorageClass, *api.StorageClass]
}

func (l volumeListers) Claim(ns, name string) (*api.PersistentVolumeClaim, bool) {
	return l.claims.Get(ns, name)
}
func (l volumeListers) Volume(name string) (*api.PersistentVolume, bool) {
	return l.volumes.Get("", name)
}
func (l volumeListers) Class(name string) (*api.StorageClass, bool) { return l.classes.Get("", name) }

type claimWriter struct{ c *client.Client }

func (w claimWriter) UpdateClaim(ctx context.Context, pvc *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error) {
	return w.c.PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc)
}

// reasonVolumeNode is Kubernetes' reason for a node a pod's volumes are
// not on.
const reasonVolumeNode = "node(s) had volume node affinity conflict"

// podVolumes finds the pod's claims: the nodes their volumes allow, and
// the claims to provision on the node chosen. why says what the pod waits
// for when a claim cannot be used yet.
func (s *Scheduler) podVolumes(pi *podInfo) (why string) {
	if s.volumes == nil {
		return ""
	}
	pod := pi.pod
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		pvc, ok := s.volumes.Claim(pod.Namespace, name)
		if !ok {
			return fmt.Sprintf("persistentvolumeclaim %q not found", name)
		}
		if pvc.DeletionTimestamp != nil {
			return fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)
		}
		if pvc.Spec.VolumeName != "" {
			pv, ok := s.volumes.Volume(pvc.Spec.VolumeName)
			if !ok {
				return fmt.Sprintf("persistentvolume %q bound to persistentvolumeclaim %q not found", pvc.Spec.VolumeName, name)
			}
			if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
				pi.volumeNodes = append(pi.volumeNodes, nodeaffinity.NewLazyErrorNodeSelector(a.Required))
			}
			continue
		}
		if !waitsForConsumer(s.volumes, pvc) {
			return "pod has unbound immediate PersistentVolumeClaims"
		}
		if node := pvc.Annotations[api.AnnotationSelectedNode]; node != "" {
			// Being provisioned there already.
			pi.selectedNodes = append(pi.selectedNodes, node)
			continue
		}
		pi.delayed = append(pi.delayed, pvc)
	}
	return ""
}

// waitsForConsumer says whether an unbound claim's class binds it on the
// node of its first pod.
func waitsForConsumer(l VolumeLister, pvc *api.PersistentVolumeClaim) bool {
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return false
	}
	sc, ok := l.Class(*pvc.Spec.StorageClassName)
	return ok && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == api.VolumeBindingWaitForFirstConsumer
}

// volumeBinding: the node is one the pod's bound volumes allow, and the
// one its claims are being provisioned on.
func volumeBinding(pi *podInfo, ni *nodeInfo) []string {
	for _, sel := range pi.volumeNodes {
		if ok, _ := sel.Match(ni.asMatchable()); !ok {
			return []string{reasonVolumeNode}
		}
	}
	for _, n := range pi.selectedNodes {
		if n != ni.node.Name {
			return []string{reasonVolumeNode}
		}
	}
	return nil
}

// selectNode names node on the pod's claims waiting for their first
// consumer, for the provisioner, before the pod is bound there.
func (s *Scheduler) selectNode(ctx context.Context, pi *podInfo, node string) error {
	for _, pvc := range pi.delayed {
		up := cache.DeepCopy(pvc)
		if up.Annotations == nil {
			up.Annotations = map[string]string{}
		}
		up.Annotations[api.AnnotationSelectedNode] = node
		if _, err := s.claims.UpdateClaim(ctx, up); err != nil {
			// Not %w: a claim gone is no pod gone; the binding is retried.
			return fmt.Errorf("selecting node %s for claim %s: %v", node, cache.Key(pvc), err)
		}
	}
	return nil
}

// volumeHandler tries pods waiting for claims again when claims, volumes
// or classes change.
func volumeHandler[PT api.Object](s *Scheduler) cache.Handler[PT] {
	return cache.Handler[PT]{
		OnAdd:    func(PT) { s.retryUnschedulable() },
		OnUpdate: func(_, _ PT) { s.retryUnschedulable() },
	}
}
