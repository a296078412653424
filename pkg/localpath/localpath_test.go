package localpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

// ToDelete: only a provisioned, pinned, Released volume under Delete, and
// its node's name.
func TestToDelete(t *testing.T) {
	provisioned := func(mut func(*api.PersistentVolume)) *api.PersistentVolume {
		pv := &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: "pvc-u1", Annotations: map[string]string{api.AnnotationProvisionedBy: api.LocalPathProvisioner}},
			Spec: api.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: api.ReclaimDelete, NodeAffinity: NodeAffinity("n1"),
				Local: &corev1.LocalVolumeSource{Path: "/s/pvc-u1_ns_data"}},
			Status: api.PersistentVolumeStatus{Phase: api.VolumeReleased}}
		if mut != nil {
			mut(pv)
		}
		return pv
	}
	for _, tc := range []struct {
		name string
		pv   *api.PersistentVolume
		node string
		ok   bool
	}{
		{"released under delete", provisioned(nil), "n1", true},
		{"hostPath made by local-path", provisioned(func(pv *api.PersistentVolume) {
			pv.Spec.Local, pv.Spec.HostPath = nil, &corev1.HostPathVolumeSource{Path: "/s/pvc-u1_ns_data"}
		}), "n1", true},
		{"bound", provisioned(func(pv *api.PersistentVolume) { pv.Status.Phase = api.VolumeBound }), "", false},
		{"available", provisioned(func(pv *api.PersistentVolume) { pv.Status.Phase = api.VolumeAvailable }), "", false},
		{"failed", provisioned(func(pv *api.PersistentVolume) { pv.Status.Phase = api.VolumeFailed }), "", false},
		{"retain", provisioned(func(pv *api.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = api.ReclaimRetain }), "", false},
		{"a user's volume", provisioned(func(pv *api.PersistentVolume) { pv.Annotations = nil }), "", false},
		{"another provisioner's", provisioned(func(pv *api.PersistentVolume) { pv.Annotations[api.AnnotationProvisionedBy] = "example.com/nfs" }), "", false},
		{"no directory", provisioned(func(pv *api.PersistentVolume) { pv.Spec.Local = nil }), "", false},
		{"no node", provisioned(func(pv *api.PersistentVolume) { pv.Spec.NodeAffinity = nil }), "", false},
		{"two nodes", provisioned(func(pv *api.PersistentVolume) {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchFields[0].Values = []string{"n1", "n2"}
		}), "", false},
		{"a node by label", provisioned(func(pv *api.PersistentVolume) {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchFields[0].Key = "kubernetes.io/hostname"
		}), "", false},
		{"not in", provisioned(func(pv *api.PersistentVolume) {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchFields[0].Operator = corev1.NodeSelectorOpNotIn
		}), "", false},
	} {
		node, ok := ToDelete(tc.pv)
		if node != tc.node || ok != tc.ok {
			t.Errorf("%s: ToDelete %q %v, want %q %v", tc.name, node, ok, tc.node, tc.ok)
		}
	}
}

// A node's own directory when it says an absolute one, else the fallback.
func TestStorageDirOf(t *testing.T) {
	node := func(dir string) *api.Node {
		return &api.Node{ObjectMeta: api.ObjectMeta{Name: "n", Annotations: map[string]string{api.AnnotationLocalPathDir: dir}}}
	}
	for _, tc := range []struct {
		node *api.Node
		want string
	}{
		{nil, "/fallback"},
		{&api.Node{}, "/fallback"},
		{node("/data/kubelet/n/storage"), "/data/kubelet/n/storage"},
		{node("/data//storage/"), "/data/storage"},
		{node("relative/storage"), "/fallback"},
		{node(""), "/fallback"},
	} {
		if got := StorageDirOf(tc.node, "/fallback"); got != tc.want {
			t.Errorf("StorageDirOf(%v): %q, want %q", tc.node, got, tc.want)
		}
	}
}
