package apiserver

import (
	"testing"
	"time"

	"minik8s/pkg/api"
)

func TestNewestDefault(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { tm := t0.Add(d); return &tm }
	sc := func(name string, created *time.Time, annotation string) api.Object {
		return &api.StorageClass{ObjectMeta: api.ObjectMeta{Name: name, CreationTimestamp: created,
			Annotations: map[string]string{annotation: "true"}}}
	}
	ic := func(name string, created *time.Time, def string) api.Object {
		return &api.IngressClass{ObjectMeta: api.ObjectMeta{Name: name, CreationTimestamp: created,
			Annotations: map[string]string{api.AnnotationDefaultIngressClass: def}}}
	}
	for _, tc := range []struct {
		name       string
		classes    []api.Object
		annotation string
		want       string
	}{
		{"none", nil, api.AnnotationDefaultStorageClass, ""},
		{"only default", []api.Object{sc("a", at(0), api.AnnotationDefaultStorageClass)}, api.AnnotationDefaultStorageClass, "a"},
		{"other annotation", []api.Object{sc("a", at(0), api.AnnotationDefaultIngressClass)}, api.AnnotationDefaultStorageClass, ""},
		{"newest wins", []api.Object{sc("new", at(time.Hour), api.AnnotationDefaultStorageClass), sc("old", at(0), api.AnnotationDefaultStorageClass)},
			api.AnnotationDefaultStorageClass, "new"},
		{"same age: first by name", []api.Object{ic("b", at(0), "true"), ic("a", at(0), "true")}, api.AnnotationDefaultIngressClass, "a"},
		{"no timestamp is oldest", []api.Object{ic("a", nil, "true"), ic("b", at(0), "true")}, api.AnnotationDefaultIngressClass, "b"},
		{"not true is no default", []api.Object{ic("a", at(time.Hour), "false"), ic("b", at(0), "true")}, api.AnnotationDefaultIngressClass, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newestDefault(tc.classes, tc.annotation); got != tc.want {
				t.Errorf("newestDefault = %q, want %q", got, tc.want)
			}
		})
	}
}
