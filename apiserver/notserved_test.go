package apiserver

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
)

// jsonFields are t's JSON fields, embedded structs inlined.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		out[name] = f.Type
	}
	return out
}

// under strips pointers, slices and maps.
func under(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

// notServed adds to out the paths of Kubernetes' type theirs that ours
// has not (status aside: the server writes it).
func notServed(ours, theirs reflect.Type, path string, out map[string]bool) {
	ours, theirs = under(ours), under(theirs)
	if ours == theirs || theirs == reflect.TypeOf(intstr.IntOrString{}) {
		return
	}
	of := jsonFields(ours)
	for name, t := range jsonFields(theirs) {
		p := strings.TrimPrefix(path+"."+name, ".")
		if p == "status" {
			continue
		}
		if o, ok := of[name]; ok {
			notServed(o, t, p, out)
		} else {
			out[p] = true
		}
	}
}

// Every field of Kubernetes' kinds that minik8s's lack (and so refuses
// with 422, fieldvalidation.go) is named in the README's list; a field
// taken should be struck from it.
func TestREADMENamesFieldsNotServed(t *testing.T) {
	list := readmeSection(t, "- **Field validation**", "- **Server-side apply**")
	missing := map[string][]string{}
	for _, res := range api.Resources {
		gv, _ := schema.ParseGroupVersion(res.GroupVersion())
		theirs, err := scheme.Scheme.New(gv.WithKind(res.Kind))
		if err != nil {
			continue
		}
		paths := map[string]bool{}
		notServed(reflect.TypeOf(res.New()), reflect.TypeOf(theirs), "", paths)
		for p := range paths {
			parts := strings.Split(p, ".")
			leaf := parts[len(parts)-1]
			if len(parts) > 1 && parts[len(parts)-2] == "volumes" {
				continue // a volume source: "volumes other than ..."
			}
			if !strings.Contains(list, "`"+leaf+"`") && !strings.Contains(list, "."+leaf+"`") {
				missing[leaf] = append(missing[leaf], res.Kind+" "+p)
			}
		}
	}
	var names []string
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("the README's list of fields not served lacks `%s` (%s)", n, strings.Join(missing[n][:1], ", "))
	}
}

// Every field stored and not acted on is named in the README's list of
// them (kubectl explain says so from the same table).
func TestREADMENamesFieldsNotActedOn(t *testing.T) {
	list := readmeSection(t, "  - stored and returned, not acted on", "  - refused when set")
	for _, f := range validation.NotActedOn {
		if !strings.Contains(list, "`"+f.Field) {
			t.Errorf("the README's list of fields not acted on lacks `%s` (%s)", f.Field, f.In.Name())
		}
	}
}

// readmeSection is the README's text from the line that starts with
// from up to the one that starts with to.
func readmeSection(t *testing.T, from, to string) string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start := strings.Index(readme, from)
	end := strings.Index(readme, to)
	if start < 0 || end < start {
		t.Fatalf("the README's section from %q to %q is gone", from, to)
	}
	return readme[start:end]
}
