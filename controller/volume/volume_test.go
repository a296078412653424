package volume

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/localpath"
)

// A released volume under Delete that no kubelet deletes is Failed with a
// message naming why, and the path that stays.
func TestUndeletable(t *testing.T) {
	made := map[string]string{api.AnnotationProvisionedBy: api.LocalPathProvisioner}
	for _, tc := range []struct {
		name string
		pv   *api.PersistentVolume
		want []string
	}{
		{"a user's hostPath", &api.PersistentVolume{Spec: api.PersistentVolumeSpec{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/db"}}},
			[]string{"host_path deleter", "/srv/db", "by hand"}},
		{"a user's local volume", &api.PersistentVolume{Spec: api.PersistentVolumeSpec{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"},
			NodeAffinity: localpath.NodeAffinity("n1")}}, []string{"no deletable volume plugin matched", "/mnt/disk"}},
		{"made, not pinned", &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Annotations: made},
			Spec: api.PersistentVolumeSpec{Local: &corev1.LocalVolumeSource{Path: "/s/pvc-1"}}}, []string{"no one node", "/s/pvc-1"}},
		{"made, no directory", &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Annotations: made}}, []string{"no local or hostPath directory"}},
	} {
		got := undeletable(tc.pv)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
	}
}
