package volume

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik8s/pkg/api"
	"minik8s/pkg/labels"
	"minik8s/pkg/localpath"
)

// className is a claim's class ("" for none).
func className(pvc *api.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName == nil {
		return ""
	}
	return *pvc.Spec.StorageClassName
}

// quantity parses a size; what does not parse is none.
func quantity(s string) resource.Quantity {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}

// matches says whether pv can be bound to pvc, as Kubernetes' PV
// controller matches: free (or kept for this claim), of the claim's class
// and volume mode, with every access mode asked, at least the size asked,
// and the labels the claim selects.
func matches(pv *api.PersistentVolume, pvc *api.PersistentVolumeClaim) bool {
	if pv.DeletionTimestamp != nil || pv.Status.Phase == api.VolumeReleased || pv.Status.Phase == api.VolumeFailed {
		return false
	}
	if r := pv.Spec.ClaimRef; r != nil && (r.Namespace != pvc.Namespace || r.Name != pvc.Name || (r.UID != "" && r.UID != pvc.UID)) {
		return false
	}
	if pv.Spec.StorageClassName != className(pvc) || mode(pv.Spec.VolumeMode) != mode(pvc.Spec.VolumeMode) {
		return false
	}
	for _, m := range pvc.Spec.AccessModes {
		if !slices.Contains(pv.Spec.AccessModes, m) {
			return false
		}
	}
	want := quantity(pvc.Spec.Resources.Requests[api.ResourceStorage])
	if have := quantity(pv.Spec.Capacity[api.ResourceStorage]); have.Cmp(want) < 0 {
		return false
	}
	if pvc.Spec.Selector != nil {
		sel, err := labels.FromLabelSelector(pvc.Spec.Selector)
		if err != nil || !sel.Matches(pv.Labels) {
			return false
		}
	}
	return true
}

func mode(m *string) string {
	if m == nil {
		return string(corev1.PersistentVolumeFilesystem)
	}
	return *m
}

// bestMatch is the smallest volume pvc can be bound to (one kept for it
// first), nil if none.
func bestMatch(pvs []*api.PersistentVolume, pvc *api.PersistentVolumeClaim) *api.PersistentVolume {
	var best *api.PersistentVolume
	for _, pv := range pvs {
		if !matches(pv, pvc) {
			continue
		}
		if pv.Spec.ClaimRef != nil {
			return pv
		}
		if best == nil {
			best = pv
			continue
		}
		a, b := quantity(pv.Spec.Capacity[api.ResourceStorage]), quantity(best.Spec.Capacity[api.ResourceStorage])
		if c := a.Cmp(b); c < 0 || (c == 0 && pv.Name < best.Name) {
			best = pv
		}
	}
	return best
}

// provision is the volume the local-path provisioner makes for pvc on
// node: a directory there (the node's kubelet makes it when it mounts
// it, and removes it when the volume is released under Delete), kept for
// the claim.
func provision(sc *api.StorageClass, pvc *api.PersistentVolumeClaim, node, storageDir string) *api.PersistentVolume {
	reclaim := api.ReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	size := pvc.Spec.Resources.Requests[api.ResourceStorage]
	vm := mode(pvc.Spec.VolumeMode)
	return &api.PersistentVolume{
		ObjectMeta: api.ObjectMeta{Name: "pvc-" + pvc.UID,
			Annotations: map[string]string{api.AnnotationProvisionedBy: sc.Provisioner}},
		Spec: api.PersistentVolumeSpec{
			Capacity:                      api.ResourceList{api.ResourceStorage: size},
			AccessModes:                   slices.Clone(pvc.Spec.AccessModes),
			ClaimRef:                      &api.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              sc.Name,
			MountOptions:                  slices.Clone(sc.MountOptions),
			VolumeMode:                    &vm,
			NodeAffinity:                  localpath.NodeAffinity(node),
			Local:                         &corev1.LocalVolumeSource{Path: localpath.Path(storageDir, pvc)},
		},
	}
}
