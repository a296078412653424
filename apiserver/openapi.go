package apiserver

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
)

// OpenAPI v3, as kubectl reads it: /openapi/v3 lists a document per group
// version; each has a path per kind whose PATCH takes fieldValidation (so
// kubectl validates on the server, which refuses unknown fields) and the
// kinds' schemas, built from the Go types by their JSON tags, marked with
// their group, version and kind (so `kubectl explain` finds them).

// openAPISchemaPrefix names the schemas ("io.minik8s.api.Pod").
const openAPISchemaPrefix = "io.minik8s.api."

type openAPI struct {
	// docs by group version path ("api/v1", "apis/apps/v1").
	docs map[string][]byte
}

func newOpenAPI() *openAPI {
	byGV := map[string][]api.Resource{}
	for _, res := range api.Resources {
		res = res.Served()
		gv := "api/" + res.Version
		if res.Group != "" {
			gv = "apis/" + res.Group + "/" + res.Version
		}
		byGV[gv] = append(byGV[gv], res)
	}
	o := &openAPI{docs: map[string][]byte{}}
	for gv, resources := range byGV {
		g := &schemaGen{schemas: map[string]any{}}
		paths := map[string]any{}
		for _, res := range resources {
			name := g.named(reflect.TypeOf(res.New()).Elem())
			gvk := []map[string]string{{"group": res.Group, "version": res.Version, "kind": res.Kind}}
			g.schemas[name].(map[string]any)["x-kubernetes-group-version-kind"] = gvk
			item := res.Path("", "{name}")
			if res.Namespaced {
				item = res.Prefix() + "/namespaces/{namespace}/" + res.Name + "/{name}"
			}
			body := map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/" + name}}}}
			op := func(verb string, params ...string) map[string]any {
				out := map[string]any{"operationId": verb + res.Kind, "x-kubernetes-group-version-kind": gvk[0],
					"responses": map[string]any{"200": map[string]any{"description": "OK", "content": body["content"]}}}
				var ps []map[string]any
				for _, p := range params {
					ps = append(ps, map[string]any{"name": p, "in": "query", "schema": map[string]string{"type": "string"}})
				}
				if ps != nil {
					out["parameters"] = ps
				}
				return out
			}
			put := op("replace", "dryRun", "fieldManager", "fieldValidation")
			put["requestBody"] = body
			patch := op("patch", "dryRun", "fieldManager", "fieldValidation", "force")
			patch["requestBody"] = map[string]any{"content": map[string]any{mergePatchType: map[string]any{"schema": map[string]string{"type": "object"}}}}
			paths[item] = map[string]any{"get": op("read"), "put": put, "patch": patch, "delete": op("delete", "dryRun")}
		}
		doc := map[string]any{"openapi": "3.0.0", "info": map[string]string{"title": "minik8s", "version": "v" + kubernetesMajor + "." + kubernetesMinor},
			"paths": paths, "components": map[string]any{"schemas": g.schemas}}
		o.docs[gv], _ = json.Marshal(doc)
	}
	return o
}

func (o *openAPI) routes(r *gin.Engine) {
	r.GET("/openapi/v3", func(c *gin.Context) {
		paths := map[string]any{}
		for gv := range o.docs {
			paths[gv] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gv}
		}
		c.JSON(http.StatusOK, map[string]any{"paths": paths})
	})
	r.GET("/openapi/v3/*gv", func(c *gin.Context) {
		doc, ok := o.docs[strings.Trim(c.Param("gv"), "/")]
		if !ok {
			fail(c, notFoundPath(c.Request.URL.Path))
			return
		}
		c.Data(http.StatusOK, "application/json", doc)
	})
}

// schemaGen builds OpenAPI schemas from Go types: a named struct becomes a
// component, referred to by $ref (which also ends recursion).
type schemaGen struct {
	schemas map[string]any
}

var (
	timeType        = reflect.TypeOf(time.Time{})
	intOrStringType = reflect.TypeOf(api.IntOrString(""))
)

// named makes the component of a named struct type and returns its name.
func (g *schemaGen) named(t reflect.Type) string {
	name := openAPISchemaPrefix + t.Name()
	if _, ok := g.schemas[name]; !ok {
		s := map[string]any{"type": "object"}
		g.schemas[name] = s
		props := map[string]any{}
		g.fields(t, props)
		s["properties"] = props
	}
	return name
}

// fields adds t's JSON fields to props, inlining embedded structs.
func (g *schemaGen) fields(t reflect.Type, props map[string]any) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			g.fields(ft, props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
	}
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case intOrStringType:
		// As Kubernetes describes it (kubectl explain says <IntOrString>).
		const name = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
		g.schemas[name] = map[string]any{"format": "int-or-string", "x-kubernetes-int-or-string": true}
		return map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/" + name}}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.Struct:
		if t.Name() == "" {
			props := map[string]any{}
			g.fields(t, props)
			return map[string]any{"type": "object", "properties": props}
		}
		return map[string]any{"$ref": "#/components/schemas/" + g.named(t)}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	}
	// Anything else (raw JSON): kept as it is.
	return map[string]any{"x-kubernetes-preserve-unknown-fields": true}
}
