package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// A projected volume puts a ConfigMap's key, a Secret's, the pod's name
// and a token of its service account for an audience in one directory,
// and says when the token is to be renewed.
func TestProjected(t *testing.T) {
	cms := fakeConfigMaps{"ns/cm": {Data: map[string]string{"a": "from-cm"}}}
	secrets := fakeSecrets{"ns/s": {Data: map[string][]byte{"b": []byte("from-secret")}}}
	secs := int64(600)
	sources := []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
			Items: []corev1.KeyToPath{{Key: "a", Path: "a.txt"}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: ptr(true)}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name",
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: &secs, Path: "token"}},
	}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: api.PodSpec{ServiceAccountName: "app",
		Volumes: []api.Volume{{Name: "all", Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: ptr(int32(0o440))}}}}}
	podDir := t.TempDir()
	vols, err := Prepare(context.Background(), pod, podDir, fakeGetter{cms, secrets}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := vols["all"]
	for name, want := range map[string]string{"a.txt": "from-cm", "b": "from-secret", "name": "p", "token": "token-for-app-vault"} {
		path := filepath.Join(v.HostPath, name)
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want %q", name, got, err, want)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o440 {
			t.Errorf("%s: mode %v %v, want 0440", name, st.Mode(), err)
		}
	}
	if !v.ReadOnly {
		t.Error("a projected volume is writable")
	}
	// Written again within RefreshPeriod (for the API's data); the token
	// alone asks for 80% of its ten minutes.
	if d := time.Until(v.RefreshAt); d <= 0 || d > RefreshPeriod {
		t.Errorf("written again in %v, want within %v", d, RefreshPeriod)
	}
	if tok, err := Projected(context.Background(), pod, podDir, 0, fakeGetter{cms, secrets}, nil); err != nil {
		t.Fatal(err)
	} else if d := time.Until(tok.RefreshAt); d < 7*time.Minute || d > 8*time.Minute {
		t.Errorf("renewed in %v, want 80%% of the token's ten minutes", d)
	}

	// Two sources writing one path, and a source minik8s does not project.
	pod.Spec.Volumes[0].Projected.Sources = append(sources, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "token", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}})
	if _, err := Prepare(context.Background(), pod, t.TempDir(), fakeGetter{cms, secrets}, nil); !errdefs.IsInvalid(err) {
		t.Errorf("a path projected twice: %v", err)
	}
	pod.Spec.Volumes[0].Projected.Sources = []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "ca"}}}
	if _, err := Prepare(context.Background(), pod, t.TempDir(), fakeGetter{cms, secrets}, nil); !errdefs.IsInvalid(err) {
		t.Errorf("a trust bundle: %v", err)
	}
}
