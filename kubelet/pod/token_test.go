package pod

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/kubelet/volume"
	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
)

// tokenMounts are the mounts at the token's path of each created container.
func tokenMounts(rt *fakeRuntime) [][]containerd.Mount {
	var out [][]containerd.Mount
	for _, s := range rt.specs {
		var ms []containerd.Mount
		for _, m := range s.Mounts {
			if m.Destination == volume.ServiceAccountMountPath {
				ms = append(ms, m)
			}
		}
		out = append(out, ms)
	}
	return out
}

func TestWorkerServiceAccountToken(t *testing.T) {
	own := []api.VolumeMount{{Name: "mine", MountPath: volume.ServiceAccountMountPath + "/"}}
	tests := []struct {
		name      string
		automount *bool
		noCA      bool                // the apiserver has no secure port
		mounts    [][]api.VolumeMount // of each container
		want      []bool              // each container gets the token
		tokens    int
	}{
		{name: "default", mounts: [][]api.VolumeMount{nil}, want: []bool{true}, tokens: 1},
		{name: "opted out", automount: ptr(false), mounts: [][]api.VolumeMount{nil}, want: []bool{false}},
		{name: "opted in", automount: ptr(true), mounts: [][]api.VolumeMount{nil, nil}, want: []bool{true, true}, tokens: 1},
		{name: "no secure port", noCA: true, mounts: [][]api.VolumeMount{nil}, want: []bool{false}},
		{name: "a container mounts its own", mounts: [][]api.VolumeMount{own, nil}, want: []bool{false, true}, tokens: 1},
		{name: "every container mounts its own", mounts: [][]api.VolumeMount{own}, want: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(nil)
			p.Spec.AutomountServiceAccountToken = tt.automount
			p.Spec.Volumes = []api.Volume{{Name: "mine", EmptyDir: &api.EmptyDirVolumeSource{}}}
			p.Spec.Containers = nil
			for i, ms := range tt.mounts {
				p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: string(rune('a' + i)), Image: "img", VolumeMounts: ms})
			}
			w, rt, fa := newTestWorker(t, p)
			fa.tokenTTL = time.Hour
			if !tt.noCA {
				fa.ca = []byte("CA")
			}
			w.sync(context.Background())
			if fa.last.Status.Phase != api.PodRunning {
				t.Fatalf("phase %s: %+v", fa.last.Status.Phase, fa.last.Status.ContainerStatuses)
			}
			if fa.tokens != tt.tokens {
				t.Errorf("%d tokens asked, want %d", fa.tokens, tt.tokens)
			}
			for i, ms := range tokenMounts(rt) {
				if got := len(ms) == 1; got != tt.want[i] {
					t.Errorf("container %d: token mounts %+v, want one: %v", i, ms, tt.want[i])
				}
				if len(ms) == 1 && (!ms[0].ReadOnly || ms[0].Source != filepath.Join(w.dir, "volumes", "kube-api-access")) {
					t.Errorf("container %d: token mount %+v", i, ms[0])
				}
			}
		})
	}
}

func TestWorkerRefreshesToken(t *testing.T) {
	p := testPod(nil)
	p.Spec.ServiceAccountName = "robot"
	w, _, fa := newTestWorker(t, p)
	fa.ca, fa.tokenTTL = []byte("CA"), time.Hour
	ctx := context.Background()
	w.sync(ctx)
	token := filepath.Join(w.dir, "volumes", "kube-api-access", "token")
	if data, _ := os.ReadFile(token); string(data) != "robot-token-1" {
		t.Fatalf("token = %q", data)
	}
	w.sync(ctx)
	if fa.tokens != 1 {
		t.Errorf("a token young enough was asked again: %d tokens", fa.tokens)
	}
	// 80% of its life has passed.
	w.token.RefreshAt = time.Now().Add(-time.Second)
	w.sync(ctx)
	if data, _ := os.ReadFile(token); string(data) != "robot-token-2" {
		t.Errorf("token after refresh = %q", data)
	}
	// A failed refresh keeps the old token and tries again later.
	fa.tokenErr = errdefs.ErrUnavailable
	w.token.RefreshAt = time.Now().Add(-time.Second)
	w.sync(ctx)
	if data, _ := os.ReadFile(token); string(data) != "robot-token-2" || time.Until(w.token.RefreshAt) <= 0 {
		t.Errorf("after a failed refresh: token %q, next try %s", data, w.token.RefreshAt)
	}
	// Nothing runs any more: no refresh.
	fa.tokenErr = nil
	for _, c := range w.containers {
		c.done = true
	}
	w.token.RefreshAt = time.Now().Add(-time.Second)
	w.sync(ctx)
	if fa.tokens != 2 {
		t.Errorf("%d tokens asked for a pod that has finished", fa.tokens)
	}
}

// Errors that keep a container from starting show in its waiting state.
func TestWorkerConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*api.Pod, *fakeAPI)
		wants []string
	}{
		{"env from a missing secret key", func(p *api.Pod, _ *fakeAPI) {
			p.Spec.Containers[0].Env = []api.EnvVar{{Name: "PASSWORD", ValueFrom: secretRef("db", "pw", nil)}}
		}, []string{"PASSWORD", `key "pw"`, "Secret default/db"}},
		{"a missing service account", func(p *api.Pod, f *fakeAPI) {
			p.Spec.ServiceAccountName = "robot"
			f.tokenErr = errdefs.ErrNotFound
		}, []string{`service account "robot"`, "not found"}},
		{"a missing secret volume", func(p *api.Pod, _ *fakeAPI) {
			p.Spec.Volumes = []api.Volume{{Name: "s", Secret: &api.SecretVolumeSource{SecretName: "nope"}}}
		}, []string{"spec.volumes[0]", `secret "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(nil)
			fa := envAPI(false)
			fa.ca, fa.tokenTTL = []byte("CA"), time.Hour
			tt.edit(p, fa)
			w, rt, _ := newTestWorker(t, p)
			w.api = fa
			w.sync(context.Background())
			if len(rt.created) != 0 {
				t.Errorf("containers created: %v", rt.created)
			}
			st := fa.last.Status.ContainerStatuses[0].State.Waiting
			if st == nil || st.Reason != "CreateContainerConfigError" {
				t.Fatalf("state %+v", fa.last.Status.ContainerStatuses[0].State)
			}
			for _, want := range tt.wants {
				if !strings.Contains(st.Message, want) {
					t.Errorf("message %q lacks %q", st.Message, want)
				}
			}
		})
	}
}
