// Package volume is the PersistentVolume controller with k3s's local-path
// provisioner: it binds claims to volumes (an Immediate claim to the
// smallest Available volume that fits, as Kubernetes' PV controller
// does), provisions a directory volume on the node the scheduler chose
// for a claim of the local-path class (WaitForFirstConsumer), and keeps
// the phases: a volume whose claim is gone is Released, its data kept
// under Retain; under Delete the kubelet of its node removes the
// directory and the volume (the controller manager runs on the control
// node only).
package volume

import (
	"context"
	"fmt"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
	"minik8s/pkg/localpath"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "persistentvolume-binder"

// Keys of the queue: a claim's and a volume's.
const (
	claimPrefix  = "claim/"
	volumePrefix = "volume/"
)

// Controller binds and provisions.
type Controller struct {
	c          *client.Client
	claims     *cache.Lister[api.PersistentVolumeClaim, *api.PersistentVolumeClaim]
	volumes    *cache.Lister[api.PersistentVolume, *api.PersistentVolume]
	classes    *cache.Lister[api.StorageClass, *api.StorageClass]
	nodes      *cache.Lister[api.Node, *api.Node]
	queue      *workqueue.Queue
	storageDir string
}

// New returns the controller, registered with the factory's informers;
// storageDir is where a node keeps provisioned volumes unless its kubelet
// says where (api.AnnotationLocalPathDir).
func New(c *client.Client, f *cache.Factory, storageDir string) *Controller {
	if storageDir == "" {
		storageDir = localpath.DefaultStorageDir
	}
	pvcInf, pvInf, scInf := f.PersistentVolumeClaims(), f.PersistentVolumes(), f.StorageClasses()
	vc := &Controller{c: c, claims: pvcInf.Lister(), volumes: pvInf.Lister(), classes: scInf.Lister(), nodes: f.Nodes().Lister(),
		queue: workqueue.New(workqueue.WithBackoff(100*time.Millisecond, 30*time.Second)), storageDir: storageDir}
	claim := func(p *api.PersistentVolumeClaim) {
		vc.queue.Add(claimPrefix + cache.Key(p))
		if p.Spec.VolumeName != "" {
			vc.queue.Add(volumePrefix + p.Spec.VolumeName)
		}
	}
	pvcInf.AddEventHandler(cache.Handler[*api.PersistentVolumeClaim]{
		OnAdd: claim, OnUpdate: func(_, p *api.PersistentVolumeClaim) { claim(p) }, OnDelete: claim,
	})
	volume := func(pv *api.PersistentVolume) {
		vc.queue.Add(volumePrefix + pv.Name)
		if r := pv.Spec.ClaimRef; r != nil {
			vc.queue.Add(claimPrefix + r.Namespace + "/" + r.Name)
		}
	}
	pvInf.AddEventHandler(cache.Handler[*api.PersistentVolume]{
		OnAdd: volume, OnUpdate: func(_, pv *api.PersistentVolume) { volume(pv) },
		// A claim waiting may bind to what another left.
		OnDelete: func(*api.PersistentVolume) { vc.pendingClaims() },
	})
	scInf.AddEventHandler(cache.Handler[*api.StorageClass]{OnAdd: func(*api.StorageClass) { vc.pendingClaims() }})
	return vc
}

func (vc *Controller) pendingClaims() {
	for _, p := range vc.claims.List(labels.Selector{}) {
		if p.Spec.VolumeName == "" {
			vc.queue.Add(claimPrefix + cache.Key(p))
		}
	}
}

// Run binds until ctx ends.
func (vc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, vc.queue, workers, Name, vc.sync)
}

func (vc *Controller) sync(ctx context.Context, key string) error {
	var err error
	switch {
	case strings.HasPrefix(key, claimPrefix):
		ns, name := cache.SplitKey(strings.TrimPrefix(key, claimPrefix))
		if pvc, ok := vc.claims.Get(ns, name); ok {
			err = vc.syncClaim(ctx, pvc)
		}
	case strings.HasPrefix(key, volumePrefix):
		if pv, ok := vc.volumes.Get("", strings.TrimPrefix(key, volumePrefix)); ok {
			err = vc.syncVolume(ctx, pv)
		}
	}
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) || errdefs.IsAlreadyExists(err) {
		// Written meanwhile: the informers bring the change and the key
		// comes again.
		return nil
	}
	return err
}

// syncClaim binds an unbound claim, or provisions its volume, and keeps a
// bound claim's status.
func (vc *Controller) syncClaim(ctx context.Context, pvc *api.PersistentVolumeClaim) error {
	if pvc.DeletionTimestamp != nil {
		return nil
	}
	if pvc.Spec.VolumeName != "" {
		pv, ok := vc.volumes.Get("", pvc.Spec.VolumeName)
		if !ok {
			return vc.claimStatus(ctx, pvc, api.ClaimLost, nil)
		}
		if r := pv.Spec.ClaimRef; r == nil {
			// Kubernetes' pre-bound claim: the volume is kept for it.
			return vc.bindVolume(ctx, pv, pvc)
		} else if r.UID != pvc.UID {
			return vc.claimStatus(ctx, pvc, api.ClaimLost, nil)
		}
		return vc.claimStatus(ctx, pvc, api.ClaimBound, pv)
	}
	sc, hasClass := vc.classes.Get("", className(pvc))
	waits := hasClass && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == api.VolumeBindingWaitForFirstConsumer
	if !waits {
		if pv := bestMatch(vc.volumes.List(labels.Selector{}), pvc); pv != nil {
			return vc.bind(ctx, pv, pvc)
		}
	}
	node := pvc.Annotations[api.AnnotationSelectedNode]
	if !hasClass || sc.Provisioner != api.LocalPathProvisioner || node == "" {
		// Waits for a volume, or for the scheduler to choose its node.
		return nil
	}
	if pv, ok := vc.volumes.Get("", "pvc-"+pvc.UID); ok {
		return vc.bind(ctx, pv, pvc)
	}
	n, _ := vc.nodes.Get("", node)
	pv, err := vc.c.PersistentVolumes().Create(ctx, provision(sc, pvc, node, localpath.StorageDirOf(n, vc.storageDir)))
	if err != nil {
		return err
	}
	return vc.bind(ctx, pv, pvc)
}

// bind binds pv and pvc: the volume's claimRef first, then the claim's
// volumeName, as Kubernetes' controller writes them.
func (vc *Controller) bind(ctx context.Context, pv *api.PersistentVolume, pvc *api.PersistentVolumeClaim) error {
	if err := vc.bindVolume(ctx, pv, pvc); err != nil {
		return err
	}
	up := cache.DeepCopy(pvc)
	up.Spec.VolumeName = pv.Name
	if up.Annotations == nil {
		up.Annotations = map[string]string{}
	}
	up.Annotations[api.AnnotationBindCompleted] = "yes"
	up.Annotations[api.AnnotationBoundByController] = "yes"
	bound, err := vc.c.PersistentVolumeClaims(pvc.Namespace).Update(ctx, up)
	if err != nil {
		return err
	}
	return vc.claimStatus(ctx, bound, api.ClaimBound, pv)
}

// bindVolume keeps pv for pvc (its claimRef, with the claim's uid).
func (vc *Controller) bindVolume(ctx context.Context, pv *api.PersistentVolume, pvc *api.PersistentVolumeClaim) error {
	if r := pv.Spec.ClaimRef; r != nil && r.UID == pvc.UID && r.Namespace == pvc.Namespace && r.Name == pvc.Name {
		return nil
	}
	up := cache.DeepCopy(pv)
	up.Spec.ClaimRef = &api.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace,
		Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion}
	_, err := vc.c.PersistentVolumes().Update(ctx, up)
	return err
}

// claimStatus writes the claim's phase, and the bound volume's size and
// modes.
func (vc *Controller) claimStatus(ctx context.Context, pvc *api.PersistentVolumeClaim, phase string, pv *api.PersistentVolume) error {
	want := api.PersistentVolumeClaimStatus{Phase: phase, Conditions: pvc.Status.Conditions}
	if pv != nil {
		want.AccessModes, want.Capacity = pv.Spec.AccessModes, pv.Spec.Capacity
	}
	if cache.Equal(want, pvc.Status) {
		return nil
	}
	up := cache.DeepCopy(pvc)
	up.Status = want
	_, err := vc.c.PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, up)
	return err
}

// syncVolume keeps the volume's phase: Available while no claim is
// bound, Bound to its claim, Released once that claim is gone.
func (vc *Controller) syncVolume(ctx context.Context, pv *api.PersistentVolume) error {
	phase := api.VolumeAvailable
	if r := pv.Spec.ClaimRef; r != nil {
		pvc, ok := vc.claims.Get(r.Namespace, r.Name)
		switch {
		case r.UID == "":
			// Kept for a claim not yet bound.
		case !ok || pvc.UID != r.UID:
			phase = api.VolumeReleased
		case pvc.Spec.VolumeName == pv.Name:
			phase = api.VolumeBound
		default:
			// The claim is being bound: its volumeName comes.
			vc.queue.Add(claimPrefix + r.Namespace + "/" + r.Name)
			return nil
		}
	}
	// Released stays (Failed too) until an admin frees the volume of its
	// claimRef: Kubernetes binds no new claim to old data.
	kept := pv.Spec.ClaimRef != nil && phase != api.VolumeBound &&
		(pv.Status.Phase == api.VolumeReleased || pv.Status.Phase == api.VolumeFailed)
	if pv.Status.Phase == phase || kept {
		if pv.Status.Phase == api.VolumeReleased {
			return vc.reclaim(ctx, pv)
		}
		return nil
	}
	up := cache.DeepCopy(pv)
	now := time.Now().UTC().Truncate(time.Second)
	up.Status = api.PersistentVolumeStatus{Phase: phase, LastPhaseTransitionTime: &now}
	_, err := vc.c.PersistentVolumes().UpdateStatus(ctx, up)
	return err
}

// reclaim acts on a Released volume's reclaim policy: under Retain its
// data is kept; under Delete the kubelet of a local-path volume's node
// removes its directory and the volume (only that node touches its
// disk), and any other volume is Failed, as Kubernetes fails a volume no
// deleter plugin takes: minik8s deletes no user's path.
func (vc *Controller) reclaim(ctx context.Context, pv *api.PersistentVolume) error {
	if pv.Spec.PersistentVolumeReclaimPolicy != api.ReclaimDelete {
		return nil
	}
	if _, ok := localpath.ToDelete(pv); ok {
		return nil
	}
	up := cache.DeepCopy(pv)
	now := time.Now().UTC().Truncate(time.Second)
	up.Status = api.PersistentVolumeStatus{Phase: api.VolumeFailed, Message: undeletable(pv), LastPhaseTransitionTime: &now}
	_, err := vc.c.PersistentVolumes().UpdateStatus(ctx, up)
	return err
}

// undeletable says why a Released volume under Delete is not deleted.
func undeletable(pv *api.PersistentVolume) string {
	dir := localpath.DirOf(pv)
	switch {
	case !localpath.Provisioned(pv) && pv.Spec.HostPath != nil:
		return fmt.Sprintf("host_path deleter: minik8s deletes no hostPath volume's data (%s is the user's, not made by %s); delete the volume and its data by hand",
			dir, api.LocalPathProvisioner)
	case !localpath.Provisioned(pv):
		return fmt.Sprintf("no deletable volume plugin matched: minik8s deletes only the directories %s made, and %s is not one; delete the volume and its data by hand",
			api.LocalPathProvisioner, dir)
	case dir == "":
		return "the volume has no local or hostPath directory to delete"
	default:
		return fmt.Sprintf("the volume's node affinity names no one node by name: no kubelet removes %s; delete the volume and its data by hand", dir)
	}
}
