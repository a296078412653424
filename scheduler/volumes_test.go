package scheduler

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

type fakeVolumes struct {
	mu      sync.Mutex
	claims  map[string]*api.PersistentVolumeClaim
	volumes map[string]*api.PersistentVolume
	classes map[string]*api.StorageClass
	updated []*api.PersistentVolumeClaim
}

func (f *fakeVolumes) Claim(ns, name string) (*api.PersistentVolumeClaim, bool) {
	c, ok := f.claims[ns+"/"+name]
	return c, ok
}
func (f *fakeVolumes) Volume(name string) (*api.PersistentVolume, bool) {
	v, ok := f.volumes[name]
	return v, ok
}
func (f *fakeVolumes) Class(name string) (*api.StorageClass, bool) {
	c, ok := f.classes[name]
	return c, ok
}
func (f *fakeVolumes) UpdateClaim(_ context.Context, pvc *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updated = append(f.updated, pvc)
	return pvc, nil
}

func claimVolume(claim string) podOpt {
	return func(p *api.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, api.Volume{Name: "data",
			PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: claim}})
	}
}

func testClaim(name, class, volume string, ann map[string]string) *api.PersistentVolumeClaim {
	return &api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, Annotations: ann},
		Spec: api.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume}}
}

func onNode(name, node string) *api.PersistentVolume {
	return &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}}
}

// A pod waits for a missing claim and for an unbound claim of a class that
// binds at once; a bound claim's volume pins it to its node; a claim
// waiting for its first consumer is given the node the pod goes to before
// the pod is bound there.
func TestVolumeBinding(t *testing.T) {
	wait, now := api.VolumeBindingWaitForFirstConsumer, api.VolumeBindingImmediate
	tests := []struct {
		name     string
		claim    *api.PersistentVolumeClaim
		wantNode string // "" : unschedulable
		wantMsg  string
		selected bool
	}{
		{name: "missing claim", wantMsg: `persistentvolumeclaim "data" not found`},
		{name: "unbound immediate", claim: testClaim("data", "fast", "", nil), wantMsg: "pod has unbound immediate PersistentVolumeClaims"},
		{name: "bound on b", claim: testClaim("data", "fast", "pv-b", nil), wantNode: "b"},
		{name: "volume gone", claim: testClaim("data", "fast", "pv-gone", nil), wantMsg: `persistentvolume "pv-gone" bound to persistentvolumeclaim "data" not found`},
		{name: "first consumer", claim: testClaim("data", "local-path", "", nil), wantNode: "any", selected: true},
		{name: "being provisioned on a", claim: testClaim("data", "local-path", "", map[string]string{api.AnnotationSelectedNode: "a"}), wantNode: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, pods, b, st := newTestScheduler(testNode("a", "1", "1Gi"), testNode("b", "1", "1Gi"))
			vols := &fakeVolumes{claims: map[string]*api.PersistentVolumeClaim{},
				volumes: map[string]*api.PersistentVolume{"pv-b": onNode("pv-b", "b")},
				classes: map[string]*api.StorageClass{"fast": {ObjectMeta: api.ObjectMeta{Name: "fast"}, VolumeBindingMode: &now},
					"local-path": {ObjectMeta: api.ObjectMeta{Name: "local-path"}, VolumeBindingMode: &wait}}}
			if tt.claim != nil {
				vols.claims["default/data"] = tt.claim
			}
			s.volumes, s.claims = vols, vols
			p := testPod("p", "", "", claimVolume("data"))
			pods.put(p)
			if err := s.sync(context.Background(), "default/p"); err != nil {
				t.Fatal(err)
			}
			s.binds.Wait()
			if tt.wantNode == "" {
				if len(b.binds) != 0 || len(st.writes) != 1 {
					t.Fatalf("binds %v, status writes %d", b.binds, len(st.writes))
				}
				msg := st.writes[0].Status.Conditions[0].Message
				if !strings.Contains(msg, tt.wantMsg) {
					t.Fatalf("message %q, want %q", msg, tt.wantMsg)
				}
				return
			}
			if len(b.binds) != 1 || (tt.wantNode != "any" && b.binds[0] != "p->"+tt.wantNode) {
				t.Fatalf("binds %v, want p on %s", b.binds, tt.wantNode)
			}
			if got := len(vols.updated); tt.selected != (got == 1) {
				t.Fatalf("claim updated %d times", got)
			}
			if tt.selected && vols.updated[0].Annotations[api.AnnotationSelectedNode] != nodeOf(b.binds[0]) {
				t.Fatalf("claim selected %q, pod bound %s", vols.updated[0].Annotations[api.AnnotationSelectedNode], b.binds[0])
			}
		})
	}
}
