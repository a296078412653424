package fields

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// The schema server-side apply merges with is Kubernetes' own: the one
// client-go's apply configurations carry (every built-in type, with its
// list types and map keys), so that containers merge by name and ports by
// port and protocol exactly as against Kubernetes. minik8s's types are
// that schema's subset plus the few fields below; a kind that is not
// Kubernetes' (the function kinds) has no schema, and merges as a
// structure of atomic lists (as a CRD without one).

// extensions are the fields minik8s's Kubernetes kinds carry beyond
// Kubernetes' schema: added to it, so that an object holding them converts.
var extensions = []struct {
	typeName string
	field    smdschema.StructField
}{
	// A function pod on the host network serves on a port the kubelet
	// picks: its status says which (pkg/api ContainerStatus.Ports).
	{"io.k8s.api.core.v1.ContainerStatus", smdschema.StructField{Name: "ports", Type: atomicList("io.k8s.api.core.v1.ContainerPort")}},
	// ... and its Endpoints address carries it.
	{"io.k8s.api.core.v1.EndpointAddress", smdschema.StructField{Name: "port", Type: scalar(smdschema.Numeric)}},
	// A kubelet serving with a certificate of the cluster CA says https.
	{"io.k8s.api.core.v1.DaemonEndpoint", smdschema.StructField{Name: "scheme", Type: scalar(smdschema.String)}},
}

func atomicList(elem string) smdschema.TypeRef {
	rel := smdschema.Atomic
	return smdschema.TypeRef{Inlined: smdschema.Atom{List: &smdschema.List{
		ElementType:         smdschema.TypeRef{NamedType: &elem},
		ElementRelationship: rel,
	}}}
}

func scalar(s smdschema.Scalar) smdschema.TypeRef {
	return smdschema.TypeRef{Inlined: smdschema.Atom{Scalar: &s}}
}

// kubernetesSchema is Kubernetes' schema with minik8s's extensions.
func kubernetesSchema() (*smdschema.Schema, error) {
	// client-go keeps its parser to itself; a typed value of any of its
	// kinds carries the whole schema.
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	tv, err := applyconfigurations.NewTypeConverter(scheme.Scheme).ObjectToTyped(pod)
	if err != nil {
		return nil, err
	}
	// A new schema (its index of names is built on first use), whose
	// extended type definitions are copies.
	s := smdschema.Schema{Types: append([]smdschema.TypeDef(nil), tv.Schema().Types...)}
	for _, ext := range extensions {
		i := indexOf(s.Types, ext.typeName)
		if i < 0 || s.Types[i].Map == nil {
			return nil, fmt.Errorf("kubernetes' schema has no struct %s to extend", ext.typeName)
		}
		old := s.Types[i].Map
		s.Types[i].Map = &smdschema.Map{
			Fields:              append(append([]smdschema.StructField(nil), old.Fields...), ext.field),
			Unions:              old.Unions,
			ElementType:         old.ElementType,
			ElementRelationship: old.ElementRelationship,
		}
	}
	return &s, nil
}

func indexOf(types []smdschema.TypeDef, name string) int {
	for i, t := range types {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// typeConverter converts objects of every served kind to typed values:
// Kubernetes' kinds by their schema, the others as deduced.
type typeConverter struct {
	parser  *typed.Parser
	kinds   map[schema.GroupVersionKind]typed.ParseableType
	deduced managedfields.TypeConverter
}

// newTypeConverter is built once: the schema is compiled in, and parsing
// it takes a tenth of a second.
var newTypeConverter = sync.OnceValues(buildTypeConverter)

func buildTypeConverter() (*typeConverter, error) {
	s, err := kubernetesSchema()
	if err != nil {
		return nil, err
	}
	tc := &typeConverter{parser: &typed.Parser{Schema: smdschema.Schema{Types: s.Types}}, kinds: map[schema.GroupVersionKind]typed.ParseableType{},
		deduced: managedfields.NewDeducedTypeConverter()}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		name, err := scheme.Scheme.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			continue
		}
		if t := tc.parser.Type(name); t.IsValid() {
			tc.kinds[gvk] = t
		}
	}
	return tc, nil
}

// kubernetes says whether gvk is a kind of Kubernetes' schema.
func (tc *typeConverter) kubernetes(gvk schema.GroupVersionKind) bool {
	_, ok := tc.kinds[gvk]
	return ok
}

func (tc *typeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	t, ok := tc.kinds[obj.GetObjectKind().GroupVersionKind()]
	if !ok {
		return tc.deduced.ObjectToTyped(obj, opts...)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%T is not unstructured", obj)
	}
	return t.FromUnstructured(u.UnstructuredContent(), opts...)
}

func (tc *typeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	return tc.deduced.TypedToObject(v)
}
