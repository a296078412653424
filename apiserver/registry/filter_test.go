package registry

import (
	"encoding/json"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/localpath"
)

// The fields read without encoding must read as the encoded object does.
func TestKnownFieldsReadAsEncoded(t *testing.T) {
	objs := []api.Object{
		&api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: api.PodSpec{NodeName: "n1"},
			Status: api.PodStatus{Phase: api.PodRunning}},
		&api.Pod{ObjectMeta: api.ObjectMeta{Name: "q"}},
		&api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "i", Namespace: "default"},
			Spec:   api.FuncInstanceSpec{Function: "f"},
			Status: api.FuncInstanceStatus{Phase: api.InstanceSucceeded, Runner: "r1"}},
		&api.FuncInstance{},
		&api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "c"}},
	}
	paths := []string{"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "spec.function", "status.runner"}
	for _, obj := range objs {
		var doc map[string]any
		data, _ := json.Marshal(obj)
		_ = json.Unmarshal(data, &doc)
		for _, p := range paths {
			path := strings.Split(p, ".")
			got, ok := knownField(obj, path)
			if !ok {
				continue
			}
			if want := fieldValue(doc, path); got != want {
				t.Errorf("%T %s: read %q, encoded %q", obj, p, got, want)
			}
		}
	}
}

func TestFilterMatches(t *testing.T) {
	inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "i", Labels: map[string]string{"a": "b"}},
		Spec: api.FuncInstanceSpec{Function: "f", Arg: "x"}, Status: api.FuncInstanceStatus{Phase: api.InstanceRunning}}
	for _, tc := range []struct {
		labels, fields string
		want           bool
	}{
		{"", "", true},
		{"a=b", "status.phase!=Succeeded,status.phase!=Failed", true},
		{"", "status.phase!=Running", false},
		{"", "spec.function=f", true},
		{"", "spec.arg=x", true}, // read from the encoded object
		{"", "spec.arg=y", false},
		{"a=c", "", false},
	} {
		f, err := ParseFilter(tc.labels, tc.fields)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Matches(inst); got != tc.want {
			t.Errorf("labels %q fields %q: matches %v, want %v", tc.labels, tc.fields, got, tc.want)
		}
	}
}

// api.FieldVolumeNode reads the one node a volume's affinity names, as
// localpath.NodeOf finds it, not the encoded object (which has no such
// field): what a kubelet's watch of its volumes, and the node authorizer,
// rely on.
func TestVolumeNodeField(t *testing.T) {
	pinned := &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: "pv"},
		Spec: api.PersistentVolumeSpec{NodeAffinity: localpath.NodeAffinity("n1")}}
	unpinned := &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: "free"}}
	for _, tc := range []struct {
		pv     *api.PersistentVolume
		fields string
		want   bool
	}{
		{pinned, api.FieldVolumeNode + "=n1", true},
		{pinned, api.FieldVolumeNode + "=n2", false},
		{pinned, api.FieldVolumeNode + "!=n1", false},
		{pinned, api.FieldVolumeNode + "=n1,metadata.name=pv", true},
		{pinned, api.FieldVolumeNode + "=n1,metadata.name=other", false},
		{unpinned, api.FieldVolumeNode + "=n1", false},
		{unpinned, api.FieldVolumeNode + "=", true},
	} {
		f, err := ParseFilter("", tc.fields)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Matches(tc.pv); got != tc.want {
			t.Errorf("%s on %s: %v, want %v", tc.fields, tc.pv.Name, got, tc.want)
		}
	}
}
