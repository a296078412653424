package fields

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// fill sets every field of v, down to depth, so that a kind's JSON has
// every path its Go type has.
func fill(v reflect.Value, depth int) {
	if depth > 20 {
		return
	}
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(time.Unix(1, 0).UTC()))
		return
	case resource.Quantity:
		v.Set(reflect.ValueOf(resource.MustParse("1")))
		return
	case metav1.FieldsV1:
		v.Set(reflect.ValueOf(metav1.FieldsV1{Raw: []byte("{}")}))
		return
	case intstr.IntOrString:
		v.Set(reflect.ValueOf(intstr.FromInt32(1)))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(json.RawMessage(`{"x":"x"}`)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("x"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}

// Every field of every Kubernetes kind minik8s serves is in the schema
// apply merges with: an object using them all converts.
func TestSchemaCoversTheTypes(t *testing.T) {
	tc, err := newTypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(api.Resources), api.OtherVersions...)
	m, err := New(all)
	if err != nil {
		t.Fatal(err)
	}
	kubernetes := 0
	for _, res := range all {
		gvk := m.gvks[key(res)]
		if !tc.kubernetes(gvk) {
			continue
		}
		kubernetes++
		obj := res.New()
		fill(reflect.ValueOf(obj).Elem(), 0)
		obj.GetObjectMeta().ManagedFields = nil
		u, err := toUnstructured(obj, gvk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tc.ObjectToTyped(u); err != nil {
			t.Errorf("%s: a field of minik8s's type is not in Kubernetes' schema (add it to extensions): %v", gvk, err)
		}
	}
	if kubernetes < 15 {
		t.Errorf("only %d kinds found in Kubernetes' schema", kubernetes)
	}
}

func configMap(t *testing.T, data map[string]string) []byte {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "default"}, "data": data})
	return b
}

func decode[T any](t *testing.T, data []byte) *T {
	t.Helper()
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func managers(meta api.ObjectMeta) []string {
	var out []string
	for _, e := range meta.ManagedFields {
		out = append(out, e.Manager+":"+string(e.Operation))
	}
	return out
}

func TestApplyOwnsAndConflicts(t *testing.T) {
	m, err := New(api.Resources)
	if err != nil {
		t.Fatal(err)
	}
	res := api.ConfigMapsResource
	// Apply on create.
	data, err := m.Apply(res, "", nil, configMap(t, map[string]string{"a": "1"}), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	cm := decode[api.ConfigMap](t, data)
	if cm.Data["a"] != "1" || !reflect.DeepEqual(managers(cm.ObjectMeta), []string{"alice:Apply"}) {
		t.Fatalf("created: %+v", cm)
	}
	// Another manager setting the same key conflicts, naming it and alice.
	_, err = m.Apply(res, "", cm, configMap(t, map[string]string{"a": "2"}), "bob", false)
	if !errdefs.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "alice"`) || !strings.Contains(err.Error(), ".data.a") {
		t.Fatalf("bob's apply: %v", err)
	}
	// bob's own key merges beside alice's.
	data, err = m.Apply(res, "", cm, configMap(t, map[string]string{"b": "2"}), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	cm2 := decode[api.ConfigMap](t, data)
	if cm2.Data["a"] != "1" || cm2.Data["b"] != "2" {
		t.Fatalf("merged: %v", cm2.Data)
	}
	// Forced, bob takes a; alice's apply without a then removes nothing of bob's.
	data, err = m.Apply(res, "", cm2, configMap(t, map[string]string{"a": "3", "b": "2"}), "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	cm3 := decode[api.ConfigMap](t, data)
	data, err = m.Apply(res, "", cm3, configMap(t, map[string]string{}), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if cm4 := decode[api.ConfigMap](t, data); cm4.Data["a"] != "3" || cm4.Data["b"] != "2" {
		t.Fatalf("after alice gave up a: %v", cm4.Data)
	}
	// An update by a third manager is recorded as an Update.
	next := decode[api.ConfigMap](t, data)
	next.Data["c"] = "4"
	m.Update(res, "", decode[api.ConfigMap](t, data), next, "kubectl-edit")
	if got := managers(next.ObjectMeta); !reflect.DeepEqual(got[len(got)-1], "kubectl-edit:Update") {
		t.Fatalf("managers after edit: %v", got)
	}
}

func TestApplyRefuses(t *testing.T) {
	m, err := New(api.Resources)
	if err != nil {
		t.Fatal(err)
	}
	for name, patch := range map[string]string{
		"unknown field":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"dataa":{}}`,
		"no kind":        `{"apiVersion":"v1","metadata":{"name":"c"}}`,
		"other kind":     `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c"}}`,
		"other version":  `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"c"}}`,
		"managedFields":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[{"manager":"x"}]}}`,
		"not an object":  `[1]`,
		"malformed yaml": "a: [",
	} {
		if _, err := m.Apply(api.ConfigMapsResource, "", nil, []byte(patch), "alice", false); !errors.Is(err, errdefs.ErrBadRequest) {
			t.Errorf("%s: %v, want 400", name, err)
		}
	}
}

// Containers merge by name, as Kubernetes' schema says; a function kind
// merges as deduced.
func TestApplyMergesByKubernetesKeys(t *testing.T) {
	m, err := New(api.Resources)
	if err != nil {
		t.Fatal(err)
	}
	dep := func(containers ...map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}}})
		return b
	}
	data, err := m.Apply(api.DeploymentsResource, "", nil, dep(map[string]any{"name": "a", "image": "x"}), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	d := decode[api.Deployment](t, data)
	data, err = m.Apply(api.DeploymentsResource, "", d, dep(map[string]any{"name": "b", "image": "y"}), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	if d = decode[api.Deployment](t, data); len(d.Spec.Template.Spec.Containers) != 2 {
		t.Fatalf("containers: %+v", d.Spec.Template.Spec.Containers)
	}
	f := []byte(`{"apiVersion":"minik8s.io/v1","kind":"Func","metadata":{"name":"f"},"spec":{"name":"f","code":"x"}}`)
	if _, err := m.Apply(api.FuncsResource, "", nil, f, "alice", false); err != nil {
		t.Fatal(err)
	}
}

// TestApplyOverAnEntryOfNoServedVersion: a managedFields entry a client
// wrote in a version no route serves is dropped, as Kubernetes drops it,
// instead of making every later apply fail.
func TestApplyOverAnEntryOfNoServedVersion(t *testing.T) {
	m, err := New(append(slices.Clone(api.Resources), api.OtherVersions...))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		res     api.Resource
		version string
		body    []byte
	}{
		{api.ConfigMapsResource, "v0", configMap(t, map[string]string{"a": "1"})},
		{api.HorizontalPodAutoscalersResource, "autoscaling/v2beta2", []byte(`{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h","namespace":"default"},"spec":{"maxReplicas":3,"scaleTargetRef":{"kind":"Deployment","name":"d"}}}`)},
	} {
		data, err := m.Apply(tc.res, "", nil, tc.body, "alice", false)
		if err != nil {
			t.Fatal(err)
		}
		obj := tc.res.New()
		if err := json.Unmarshal(data, obj); err != nil {
			t.Fatal(err)
		}
		meta := obj.GetObjectMeta()
		ghost := meta.ManagedFields[0]
		ghost.Manager, ghost.APIVersion = "ghost", tc.version
		meta.ManagedFields = append(meta.ManagedFields, ghost)
		data, err = m.Apply(tc.res, "", obj, tc.body, "alice", false)
		if err != nil {
			t.Fatalf("%s: an apply over an entry of %s: %v", tc.res.Kind, tc.version, err)
		}
		if strings.Contains(string(data), `"ghost"`) {
			t.Errorf("%s: the entry of %s is kept: %s", tc.res.Kind, tc.version, data)
		}
	}
}
