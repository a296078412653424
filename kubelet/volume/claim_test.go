package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

type fakeClaims struct {
	claims  map[string]*api.PersistentVolumeClaim
	volumes map[string]*api.PersistentVolume
}

func (f fakeClaims) GetClaim(_ context.Context, ns, name string) (*api.PersistentVolumeClaim, error) {
	if c, ok := f.claims[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("persistentvolumeclaims %q %w", name, errdefs.ErrNotFound)
}

func (f fakeClaims) GetVolume(_ context.Context, name string) (*api.PersistentVolume, error) {
	if v, ok := f.volumes[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("persistentvolumes %q %w", name, errdefs.ErrNotFound)
}

// A bound claim mounts its volume's directory, made on the node for a
// local-path volume; an unbound one waits, saying so.
func TestClaimVolume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pvc-u1_ns_data")
	bound := &api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1"},
		Spec: api.PersistentVolumeClaimSpec{VolumeName: "pvc-u1"}, Status: api.PersistentVolumeClaimStatus{Phase: api.ClaimBound}}
	pending := &api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Namespace: "ns", Name: "later", UID: "u2"},
		Status: api.PersistentVolumeClaimStatus{Phase: api.ClaimPending}}
	stolen := &api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Namespace: "ns", Name: "stolen", UID: "u3"},
		Spec: api.PersistentVolumeClaimSpec{VolumeName: "pvc-u1"}, Status: api.PersistentVolumeClaimStatus{Phase: api.ClaimBound}}
	g := fakeClaims{
		claims: map[string]*api.PersistentVolumeClaim{"ns/data": bound, "ns/later": pending, "ns/stolen": stolen},
		volumes: map[string]*api.PersistentVolume{"pvc-u1": {ObjectMeta: api.ObjectMeta{Name: "pvc-u1",
			Annotations: map[string]string{api.AnnotationProvisionedBy: api.LocalPathProvisioner}},
			Spec: api.PersistentVolumeSpec{ClaimRef: &api.ObjectReference{Namespace: "ns", Name: "data", UID: "u1"},
				Local: &corev1.LocalVolumeSource{Path: dir}}}},
	}
	vol, err := claimVolume(context.Background(), "ns", &api.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}, "spec.volumes[0]", g)
	if err != nil {
		t.Fatal(err)
	}
	if vol.HostPath != dir || !vol.ReadOnly {
		t.Fatalf("volume %+v, want %s read-only", vol, dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("the local-path directory was not made: %v", err)
	}
	for claim, want := range map[string]string{"later": "is not bound yet", "stolen": "is not bound to claim", "gone": "not found"} {
		_, err := claimVolume(context.Background(), "ns", &api.PersistentVolumeClaimVolumeSource{ClaimName: claim}, "spec.volumes[0]", g)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("claim %s: %v, want %q", claim, err, want)
		}
	}
	if _, err := claimVolume(context.Background(), "ns", &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}, "spec.volumes[0]", struct{}{}); !errdefs.IsInvalid(err) {
		t.Errorf("without a claim getter: %v", err)
	}
}
