// Package admission holds the apiserver's admission rules that need no
// server: which pod specs an object carries and which of them reach into
// their node.
package admission

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// Pod admission must see every pod an object can make, whatever its kind:
// a Pod's spec, a ReplicaSet's, Deployment's or Job's template, a
// CronJob's job template, and any kind added later. The specs are found
// by the object's Go type, not by a list of kinds, so a new kind carrying
// an api.PodSpec anywhere is admitted without anyone remembering it.

// PodSpecAt is one pod spec an object carries and where (its JSON path,
// "spec.template.spec").
type PodSpecAt struct {
	Path string
	Spec *api.PodSpec
}

var podSpecType = reflect.TypeOf(api.PodSpec{})

// carriers caches, per type, whether values of it can hold a PodSpec.
var carriers sync.Map // reflect.Type → bool

// carriesPodSpec says whether a value of type t can hold an api.PodSpec.
func carriesPodSpec(t reflect.Type) bool {
	if v, ok := carriers.Load(t); ok {
		return v.(bool)
	}
	v := carries(t, map[reflect.Type]bool{})
	carriers.Store(t, v)
	return v
}

func carries(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == podSpecType {
		return true
	}
	if seen[t] {
		return false // a recursive type: its other fields decide
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true // the dynamic value decides
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return carries(t.Elem(), seen)
	case reflect.Map:
		return carries(t.Key(), seen) || carries(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && carries(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// PodSpecsOf lists every pod spec obj carries, and the specs of the pods
// the platform derives from it (a Func's pods are made from its spec by
// function.PodSpec, so admission judges those as if written out).
func PodSpecsOf(obj any) []PodSpecAt {
	var out []PodSpecAt
	if v := reflect.ValueOf(obj); v.IsValid() && carriesPodSpec(v.Type()) {
		walkPodSpecs(v, "", &out)
	}
	if f, ok := obj.(*api.Func); ok {
		spec := function.PodSpec(f)
		out = append(out, PodSpecAt{Path: "(the pods of function " + f.Name + ")", Spec: &spec})
	}
	return out
}

func walkPodSpecs(v reflect.Value, path string, out *[]PodSpecAt) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkPodSpecs(v.Elem(), path, out)
		}
	case reflect.Slice, reflect.Array:
		if !carriesPodSpec(v.Type().Elem()) {
			return
		}
		for i := 0; i < v.Len(); i++ {
			walkPodSpecs(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		if !carriesPodSpec(v.Type().Elem()) {
			return
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			// Map values are not addressable: a copy is judged.
			c := reflect.New(v.Type().Elem()).Elem()
			c.Set(v.MapIndex(k))
			walkPodSpecs(c, fmt.Sprintf("%s[%v]", path, k), out)
		}
	case reflect.Struct:
		if v.Type() == podSpecType {
			if !v.CanAddr() {
				c := reflect.New(podSpecType).Elem()
				c.Set(v)
				v = c
			}
			*out = append(*out, PodSpecAt{Path: path, Spec: v.Addr().Interface().(*api.PodSpec)})
			return
		}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || !carriesPodSpec(f.Type) {
				continue
			}
			walkPodSpecs(v.Field(i), fieldPath(path, f), out)
		}
	}
}

// fieldPath extends path by f's JSON name (an inlined field adds none).
func fieldPath(path string, f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case name == "-":
		return path
	case name == "" && f.Anonymous:
		return path
	case name == "":
		name = f.Name
	}
	if path == "" {
		return name
	}
	return path + "." + name
}
