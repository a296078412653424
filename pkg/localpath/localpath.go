// Package localpath is what k3s's local-path provisioner and the nodes
// keeping its volumes share: where a claim's directory lives on its node,
// how a volume is pinned to that node, and which volumes the node's
// kubelet deletes (Released under the Delete reclaim policy). The
// controller manager provisions, the node's kubelet deletes, and the
// apiserver's node authorizer lets a node delete those volumes alone.
package localpath

import (
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

// DefaultStorageDir is where volumes live on a node whose kubelet says
// nothing of its own (api.AnnotationLocalPathDir), as k3s keeps them
// under /var/lib/rancher/k3s/storage.
const DefaultStorageDir = "/var/lib/minik8s/storage"

// StorageDirOf is where node keeps its volumes: the directory its
// kubelet published, else fallback.
func StorageDirOf(node *api.Node, fallback string) string {
	if node != nil {
		if d := node.Annotations[api.AnnotationLocalPathDir]; filepath.IsAbs(d) {
			return filepath.Clean(d)
		}
	}
	return fallback
}

// Path is the directory of a claim's volume under the storage dir, named
// as k3s's local-path provisioner names it.
func Path(storageDir string, pvc *api.PersistentVolumeClaim) string {
	return filepath.Join(storageDir, fmt.Sprintf("pvc-%s_%s_%s", pvc.UID, pvc.Namespace, pvc.Name))
}

// NodeAffinity pins a volume to one node, by name.
func NodeAffinity(node string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

// NodeOf is the one node a volume's affinity names by name ("" if not
// one such): the value of the field api.FieldVolumeNode.
func NodeOf(pv *api.PersistentVolume) string {
	a := pv.Spec.NodeAffinity
	if a == nil || a.Required == nil || len(a.Required.NodeSelectorTerms) != 1 {
		return ""
	}
	t := a.Required.NodeSelectorTerms[0]
	if len(t.MatchExpressions) != 0 || len(t.MatchFields) != 1 {
		return ""
	}
	f := t.MatchFields[0]
	if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn || len(f.Values) != 1 {
		return ""
	}
	return f.Values[0]
}

// DirOf is a volume's directory on its node ("" for a volume of neither
// source).
func DirOf(pv *api.PersistentVolume) string {
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	}
	return ""
}

// Provisioned tells whether the local-path provisioner made pv (its
// pv.kubernetes.io/provisioned-by annotation): its directory is the
// cluster's, not a user's.
func Provisioned(pv *api.PersistentVolume) bool {
	return pv.Annotations[api.AnnotationProvisionedBy] == api.LocalPathProvisioner
}

// ToDelete tells whether pv is to be deleted, and returns the node whose
// kubelet deletes it (its directory, then the volume): a volume the
// local-path provisioner made, pinned to one node, whose claim is gone
// (Released) under the Delete reclaim policy. The node authorizer lets
// that node, and no other, delete it.
func ToDelete(pv *api.PersistentVolume) (node string, ok bool) {
	if pv.Status.Phase != api.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != api.ReclaimDelete || !Provisioned(pv) || DirOf(pv) == "" {
		return "", false
	}
	node = NodeOf(pv)
	return node, node != ""
}
