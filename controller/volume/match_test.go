package volume

import (
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/localpath"
)

func pv(name, size, class string, modes ...string) *api.PersistentVolume {
	return &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: name, Labels: map[string]string{"disk": "ssd"}},
		Spec:   api.PersistentVolumeSpec{Capacity: api.ResourceList{api.ResourceStorage: size}, AccessModes: modes, StorageClassName: class},
		Status: api.PersistentVolumeStatus{Phase: api.VolumeAvailable}}
}

func pvc(size, class string, modes ...string) *api.PersistentVolumeClaim {
	return &api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1"},
		Spec: api.PersistentVolumeClaimSpec{AccessModes: modes, StorageClassName: &class,
			Resources: api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: size}}}}
}

func TestBestMatch(t *testing.T) {
	kept := pv("kept", "5Gi", "manual", "ReadWriteOnce")
	kept.Spec.ClaimRef = &api.ObjectReference{Namespace: "ns", Name: "data"}
	other := pv("other", "1Gi", "manual", "ReadWriteOnce")
	other.Spec.ClaimRef = &api.ObjectReference{Namespace: "ns", Name: "else", UID: "u2"}
	released := pv("released", "1Gi", "manual", "ReadWriteOnce")
	released.Status.Phase = api.VolumeReleased
	tests := []struct {
		name  string
		pvs   []*api.PersistentVolume
		claim *api.PersistentVolumeClaim
		want  string
	}{
		{"smallest that fits", []*api.PersistentVolume{pv("big", "10Gi", "manual", "ReadWriteOnce"), pv("small", "1Gi", "manual", "ReadWriteOnce"),
			pv("tiny", "100Mi", "manual", "ReadWriteOnce")}, pvc("500Mi", "manual", "ReadWriteOnce"), "small"},
		{"same size in other units", []*api.PersistentVolume{pv("a", "1024Mi", "manual", "ReadWriteOnce")}, pvc("1Gi", "manual", "ReadWriteOnce"), "a"},
		{"other class", []*api.PersistentVolume{pv("a", "1Gi", "fast", "ReadWriteOnce")}, pvc("1Gi", "manual", "ReadWriteOnce"), ""},
		{"no class asks none", []*api.PersistentVolume{pv("a", "1Gi", "", "ReadWriteOnce")}, pvc("1Gi", "", "ReadWriteOnce"), "a"},
		{"access mode missing", []*api.PersistentVolume{pv("a", "1Gi", "manual", "ReadWriteOnce")}, pvc("1Gi", "manual", "ReadWriteMany"), ""},
		{"every mode asked", []*api.PersistentVolume{pv("a", "1Gi", "manual", "ReadWriteOnce", "ReadOnlyMany")}, pvc("1Gi", "manual", "ReadOnlyMany", "ReadWriteOnce"), "a"},
		{"kept for it first", []*api.PersistentVolume{pv("small", "1Gi", "manual", "ReadWriteOnce"), kept}, pvc("1Gi", "manual", "ReadWriteOnce"), "kept"},
		{"kept for another", []*api.PersistentVolume{other}, pvc("1Gi", "manual", "ReadWriteOnce"), ""},
		{"released", []*api.PersistentVolume{released}, pvc("1Gi", "manual", "ReadWriteOnce"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if m := bestMatch(tt.pvs, tt.claim); m != nil {
				got = m.Name
			}
			if got != tt.want {
				t.Fatalf("matched %q, want %q", got, tt.want)
			}
		})
	}
	// A selector picks by the volume's labels.
	c := pvc("1Gi", "manual", "ReadWriteOnce")
	c.Spec.Selector = &api.LabelSelector{MatchLabels: map[string]string{"disk": "hdd"}}
	if m := bestMatch([]*api.PersistentVolume{pv("a", "1Gi", "manual", "ReadWriteOnce")}, c); m != nil {
		t.Fatalf("selector ignored: %s", m.Name)
	}
}

// The provisioned volume is the claim's: its size, modes and class, the
// class's reclaim policy, a directory named as local-path names it, on
// the node chosen.
func TestProvision(t *testing.T) {
	retain := api.ReclaimRetain
	sc := &api.StorageClass{ObjectMeta: api.ObjectMeta{Name: "local-path"}, Provisioner: api.LocalPathProvisioner, ReclaimPolicy: &retain}
	claim := pvc("2Gi", "local-path", "ReadWriteOnce")
	got := provision(sc, claim, "node-b", "/var/lib/minik8s/storage")
	if got.Name != "pvc-u1" || got.Spec.Capacity[api.ResourceStorage] != "2Gi" || got.Spec.AccessModes[0] != "ReadWriteOnce" ||
		got.Spec.StorageClassName != "local-path" || got.Spec.PersistentVolumeReclaimPolicy != api.ReclaimRetain ||
		got.Annotations[api.AnnotationProvisionedBy] != api.LocalPathProvisioner {
		t.Fatalf("provisioned %+v", got)
	}
	if p := got.Spec.Local.Path; p != "/var/lib/minik8s/storage/pvc-u1_ns_data" {
		t.Fatalf("path %q", p)
	}
	if r := got.Spec.ClaimRef; r == nil || r.UID != "u1" || r.Namespace != "ns" || r.Name != "data" {
		t.Fatalf("claimRef %+v", r)
	}
	if n := localpath.NodeOf(got); n != "node-b" {
		t.Fatalf("node %q", n)
	}
	if !matches(got, claim) {
		t.Fatal("the claim does not match its own volume")
	}
}
