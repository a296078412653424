package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik8s/pkg/api"
)

// The custom kinds in OpenAPI, built by apiextensions-apiserver's own
// builder (as Kubernetes' openapi controllers build them: the kind's
// schema from openAPIV3Schema under metadata, apiVersion and kind, its
// list, its paths with their options) when the definitions served
// change, and merged into the built-in documents: a group version of
// custom kinds gets a v3 document of its own, the v2 document gains their
// paths and definitions. The builder brings k8s.io/apiserver's endpoints
// package and client-go's clientset with it (bin/minik8s grows by a few
// MB): a copy of it would be a copy of Kubernetes' schema conventions.

// customOpenAPIKey says what the documents are built from: the served
// definitions' names and specs (not their status, whose conditions the
// controller writes after each change).
func customOpenAPIKey(crds []*api.CustomResourceDefinition) string {
	h := sha512.New()
	for _, crd := range crds {
		data, _ := json.Marshal([]any{crd.Name, crd.Spec, crd.Status.AcceptedNames})
		h.Write(data)
	}
	return fmt.Sprintf("%X", h.Sum(nil))
}

// customOpenAPI builds the v3 documents of the custom group versions
// ("apis/GROUP/VERSION") and the v2 paths and definitions of crds' served
// versions. A definition the builder refuses is left out, logged by the
// caller through err, the others are built.
func customOpenAPI(crds []*api.CustomResourceDefinition) (v3 map[string]*spec3.OpenAPI, v2 *spec.Swagger, err error) {
	byGV := map[string][]*spec3.OpenAPI{}
	v2 = &spec.Swagger{SwaggerProps: spec.SwaggerProps{Paths: &spec.Paths{Paths: map[string]spec.PathItem{}}, Definitions: spec.Definitions{}}}
	var errs []string
	for _, crd := range crds {
		in := &apiextv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}, Spec: crd.Spec, Status: crd.Status}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			doc, err := builder.BuildOpenAPIV3(in, v.Name, builder.Options{})
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s %s: %v", crd.Name, v.Name, err))
				continue
			}
			gv := "apis/" + crd.Spec.Group + "/" + v.Name
			byGV[gv] = append(byGV[gv], doc)
			sw, err := builder.BuildOpenAPIV2(in, v.Name, builder.Options{V2: true})
			if err == nil {
				v2, err = builder.MergeSpecs(v2, sw)
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s %s (v2): %v", crd.Name, v.Name, err))
			}
		}
	}
	v3 = map[string]*spec3.OpenAPI{}
	for gv, docs := range byGV {
		doc, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", gv, err))
			continue
		}
		v3[gv] = doc
	}
	if errs != nil {
		err = fmt.Errorf("OpenAPI of custom resources: %s", strings.Join(errs, "; "))
	}
	return v3, v2, err
}

// mergeOpenAPI adds to base (a document as JSON objects) the paths of
// add and the schemas under section ("definitions", or "components" then
// "schemas") base has not: those both have are the meta and autoscaling
// kinds every custom kind refers to, the same under the same name.
func mergeOpenAPI(base, add map[string]any, section ...string) map[string]any {
	out := maps.Clone(base)
	out["paths"] = mergeObjects(asObject(base["paths"]), asObject(add["paths"]))
	into := func(doc map[string]any) map[string]any {
		for _, s := range section[:len(section)-1] {
			doc = asObject(doc[s])
		}
		return asObject(doc[section[len(section)-1]])
	}
	schemas := mergeObjects(into(base), into(add))
	if len(section) == 1 {
		out[section[0]] = schemas
		return out
	}
	parent := maps.Clone(asObject(base[section[0]]))
	parent[section[1]] = schemas
	out[section[0]] = parent
	return out
}

// mergeObjects is a copy of a with the keys of b it lacks.
func mergeObjects(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := out[k]; !ok {
			out[k] = b[k]
		}
	}
	return out
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// toObject is v as JSON objects.
func toObject(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}
