package etcd

import (
	"testing"

	"minik8s/pkg/api"
)

func TestRecentObjects(t *testing.T) {
	obj := func(name string) api.Object { return &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name}} }
	name := func(o api.Object) string {
		if o == nil {
			return ""
		}
		return o.GetObjectMeta().Name
	}
	r := newRecentObjects(2)
	r.put("a", 1, obj("a1"))
	r.put("b", 2, obj("b2"))
	r.put("a", 3, obj("a3")) // a held key: no new generation
	r.put("c", 4, obj("c4")) // a new key with the newer full: it becomes the older
	r.put("d", 5, obj("d5"))
	r.put("e", 6, obj("e6")) // again: a and b are dropped
	r.forget("e")
	for _, tc := range []struct {
		key  string
		rev  int64
		want string
	}{
		{"a", 1, ""},   // replaced by a newer revision
		{"a", 3, ""},   // two generations ago
		{"c", 4, "c4"}, // in the older generation
		{"d", 5, "d5"},
		{"d", 4, ""}, // another revision than the one held
		{"e", 6, ""}, // forgotten
		{"x", 1, ""},
	} {
		if got := name(r.get(tc.key, tc.rev)); got != tc.want {
			t.Errorf("get(%s, %d) = %q, want %q", tc.key, tc.rev, got, tc.want)
		}
	}
}
