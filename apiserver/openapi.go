package apiserver

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
)

// OpenAPI v3, as kubectl reads it: /openapi/v3 lists a document per group
// version (/openapi/v2 is one document of them all, for older clients);
// each has a path per kind whose PATCH takes fieldValidation (so
// kubectl validates on the server, which refuses unknown fields) and the
// kinds' schemas, built from the Go types by their JSON tags, marked with
// their group, version and kind (so `kubectl explain` finds them).

// openAPISchemaPrefix names the schemas ("io.minik8s.api.Pod").
const openAPISchemaPrefix = "io.minik8s.api."

type openAPI struct {
	// builtin are the built-in kinds' v3 documents by group version path
	// ("api/v1", "apis/apps/v1"), builtinV2 their v2 (Swagger 2.0)
	// document of every group, as JSON and as the protobuf client-go
	// asks for.
	builtin               map[string][]byte
	builtinV2, builtinV2P []byte

	mu  sync.RWMutex
	cur *openAPIDocs
	// key is what cur's custom kinds were built from (customOpenAPIKey).
	key string
}

// openAPIDocs are the documents served now, each with its hash (the
// ETag, and the ?hash= of its URL in the v3 index, so that a client's
// cache of a document is replaced when it changes, as Kubernetes does).
type openAPIDocs struct {
	docs        map[string][]byte
	hashes      map[string]string
	index       []byte
	indexHash   string
	v2, v2Proto []byte
	v2Hash      string
}

func newOpenAPIDocs(docs map[string][]byte, v2, v2Proto []byte) *openAPIDocs {
	d := &openAPIDocs{docs: docs, hashes: map[string]string{}, v2: v2, v2Proto: v2Proto, v2Hash: openAPIHash(v2)}
	paths := map[string]any{}
	for gv, doc := range docs {
		d.hashes[gv] = openAPIHash(doc)
		paths[gv] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gv + "?hash=" + d.hashes[gv]}
	}
	d.index, _ = json.Marshal(map[string]any{"paths": paths})
	d.indexHash = openAPIHash(d.index)
	return d
}

// openAPIHash is Kubernetes' ETag of a document.
func openAPIHash(data []byte) string { return fmt.Sprintf("%X", sha512.Sum512(data)) }

func (o *openAPI) docs() *openAPIDocs {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.cur
}

func newOpenAPI() *openAPI {
	byGV := map[string][]api.Resource{}
	for _, res := range append(slices.Clone(api.Resources), api.OtherVersions...) {
		res = res.Served()
		gv := "api/" + res.Version
		if res.Group != "" {
			gv = "apis/" + res.Group + "/" + res.Version
		}
		byGV[gv] = append(byGV[gv], res)
	}
	o := &openAPI{builtin: map[string][]byte{}}
	for gv, resources := range byGV {
		g := &schemaGen{schemas: map[string]any{}, refPrefix: "#/components/schemas/"}
		paths := map[string]any{}
		for _, res := range resources {
			item, ops := openAPIPaths(g, res, false)
			paths[item] = ops
		}
		doc := map[string]any{"openapi": "3.0.0", "info": openAPIInfo(),
			"paths": paths, "components": map[string]any{"schemas": g.schemas}}
		o.builtin[gv], _ = json.Marshal(doc)
	}
	g := &schemaGen{schemas: map[string]any{}, refPrefix: "#/definitions/"}
	paths := map[string]any{}
	for _, res := range append(slices.Clone(api.Resources), api.OtherVersions...) {
		item, ops := openAPIPaths(g, res.Served(), true)
		paths[item] = ops
	}
	o.builtinV2, _ = json.Marshal(map[string]any{"swagger": "2.0", "info": openAPIInfo(), "paths": paths, "definitions": g.schemas})
	var err error
	if o.builtinV2P, err = openAPIV2Proto(o.builtinV2); err != nil {
		panic(err)
	}
	o.cur = newOpenAPIDocs(o.builtin, o.builtinV2, o.builtinV2P)
	o.key = customOpenAPIKey(nil)
	return o
}

// openAPIV2Proto is a v2 document in protobuf (gnostic's Document).
func openAPIV2Proto(v2 []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(v2)
	if err != nil {
		return nil, fmt.Errorf("the OpenAPI v2 document does not parse: %v", err)
	}
	out, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenAPI v2 document: %v", err)
	}
	return out, nil
}

// setCustom serves the built-in documents with the kinds of crds (the
// definitions served now) merged in, when these changed.
func (o *openAPI) setCustom(crds []*api.CustomResourceDefinition) error {
	key := customOpenAPIKey(crds)
	o.mu.RLock()
	same := key == o.key
	o.mu.RUnlock()
	if same {
		return nil
	}
	v3, v2, buildErr := customOpenAPI(crds)
	docs := maps.Clone(o.builtin)
	for gv, doc := range v3 {
		add, err := toObject(doc)
		if err != nil {
			return err
		}
		if b, ok := docs[gv]; ok {
			// A custom kind in a built-in group version (a definition
			// may name any group not Kubernetes' own).
			var base map[string]any
			if err := json.Unmarshal(b, &base); err != nil {
				return err
			}
			add = mergeOpenAPI(base, add, "components", "schemas")
		}
		if docs[gv], err = json.Marshal(add); err != nil {
			return err
		}
	}
	v2JSON, v2Proto := o.builtinV2, o.builtinV2P
	if len(v2.Paths.Paths) > 0 {
		var base map[string]any
		if err := json.Unmarshal(o.builtinV2, &base); err != nil {
			return err
		}
		add, err := toObject(v2)
		if err != nil {
			return err
		}
		if v2JSON, err = json.Marshal(mergeOpenAPI(base, add, "definitions")); err != nil {
			return err
		}
		if v2Proto, err = openAPIV2Proto(v2JSON); err != nil {
			return err
		}
	}
	cur := newOpenAPIDocs(docs, v2JSON, v2Proto)
	o.mu.Lock()
	o.cur, o.key = cur, key
	o.mu.Unlock()
	return buildErr
}

func openAPIInfo() map[string]string {
	return map[string]string{"title": "minik8s", "version": "v" + kubernetesMajor + "." + kubernetesMinor}
}

// openAPIPaths describes the object path of res, in OpenAPI v3 or v2
// (whose bodies are parameters and responses carry a bare schema), and
// makes its kind's schema, marked with its group, version and kind.
func openAPIPaths(g *schemaGen, res api.Resource, v2 bool) (string, map[string]any) {
	name := g.named(reflect.TypeOf(res.New()).Elem())
	gvk := []map[string]string{{"group": res.Group, "version": res.Version, "kind": res.Kind}}
	g.schemas[name].(map[string]any)["x-kubernetes-group-version-kind"] = gvk
	item := res.Path("", "{name}")
	if res.Namespaced {
		item = res.Prefix() + "/namespaces/{namespace}/" + res.Name + "/{name}"
	}
	ref := map[string]any{"$ref": g.refPrefix + name}
	content := map[string]any{"application/json": map[string]any{"schema": ref}}
	op := func(verb string, params ...string) map[string]any {
		ok := map[string]any{"description": "OK", "content": content}
		if v2 {
			ok = map[string]any{"description": "OK", "schema": ref}
		}
		out := map[string]any{"operationId": verb + res.Kind, "x-kubernetes-group-version-kind": gvk[0],
			"responses": map[string]any{"200": ok}}
		var ps []map[string]any
		for _, p := range params {
			if v2 {
				ps = append(ps, map[string]any{"name": p, "in": "query", "type": "string"})
			} else {
				ps = append(ps, map[string]any{"name": p, "in": "query", "schema": map[string]string{"type": "string"}})
			}
		}
		if ps != nil {
			out["parameters"] = ps
		}
		return out
	}
	body := func(o map[string]any, schema map[string]any, ctype string) map[string]any {
		if v2 {
			ps, _ := o["parameters"].([]map[string]any)
			o["parameters"] = append(ps, map[string]any{"name": "body", "in": "body", "required": true, "schema": schema})
			o["consumes"] = []string{ctype}
			return o
		}
		o["requestBody"] = map[string]any{"content": map[string]any{ctype: map[string]any{"schema": schema}}}
		return o
	}
	put := body(op("replace", "dryRun", "fieldManager", "fieldValidation"), ref, "application/json")
	patch := body(op("patch", "dryRun", "fieldManager", "fieldValidation", "force"), map[string]any{"type": "object"}, mergePatchType)
	return item, map[string]any{"get": op("read"), "put": put, "patch": patch, "delete": op("delete", "dryRun")}
}

func (o *openAPI) routes(r *router) {
	r.handle(http.MethodGet, "/openapi/v2", nonResource(), func(c *gin.Context) {
		d := o.docs()
		c.Header("Etag", strconv.Quote(d.v2Hash))
		// client-go asks for protobuf (gnostic's Document); others get JSON.
		if strings.Contains(c.GetHeader("Accept"), "protobuf") {
			c.Header("Vary", "Accept")
			c.Data(http.StatusOK, openAPIV2Protobuf, d.v2Proto)
			return
		}
		c.Data(http.StatusOK, "application/json", d.v2)
	})
	r.handle(http.MethodGet, "/openapi/v3", nonResource(), func(c *gin.Context) {
		d := o.docs()
		c.Header("Etag", strconv.Quote(d.indexHash))
		c.Header("Content-Type", "application/json")
		http.ServeContent(c.Writer, c.Request, "", time.Time{}, bytes.NewReader(d.index))
	})
	r.handle(http.MethodGet, "/openapi/v3/*gv", nonResource(), func(c *gin.Context) {
		d := o.docs()
		gv := strings.Trim(c.Param("gv"), "/")
		doc, ok := d.docs[gv]
		if !ok {
			fail(c, notFoundPath(c.Request.URL.Path))
			return
		}
		// As Kubernetes' handler3: a URL with the document's hash may be
		// cached for good; one with another hash (a stale index) is sent
		// to the current one.
		etag := d.hashes[gv]
		c.Header("Etag", strconv.Quote(etag))
		c.Header("Vary", "Accept")
		if hash := c.Query("hash"); hash != "" {
			if hash != etag {
				c.Redirect(http.StatusMovedPermanently, "/openapi/v3/"+gv+"?hash="+etag)
				return
			}
			c.Header("Cache-Control", "public, immutable")
			c.Header("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
		}
		c.Header("Content-Type", "application/json")
		http.ServeContent(c.Writer, c.Request, "", time.Time{}, bytes.NewReader(doc))
	})
}

// openAPIV2Protobuf is the media type of the protobuf OpenAPI v2 document
// as Kubernetes answers it (clients ask for ...v2@v1.0+protobuf, which Go's
// media type parser, and so client-go, would not read back).
const openAPIV2Protobuf = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

// schemaGen builds OpenAPI schemas from Go types: a named struct becomes a
// component, referred to by $ref (which also ends recursion).
type schemaGen struct {
	schemas map[string]any
	// refPrefix is where references point: components (v3) or
	// definitions (v2).
	refPrefix string
}

var (
	timeType        = reflect.TypeOf(time.Time{})
	intOrStringType = reflect.TypeOf(api.IntOrString(""))
	// Kubernetes' own types in ours (fields typed from k8s.io/api) that
	// marshal as JSON strings or numbers, not as their Go structs.
	k8sIntOrStringType = reflect.TypeOf(intstr.IntOrString{})
	quantityType       = reflect.TypeOf(resource.Quantity{})
	metaTimeType       = reflect.TypeOf(metav1.Time{})
	microTimeTypes     = []reflect.Type{reflect.TypeOf(metav1.MicroTime{}), reflect.TypeOf(api.MicroTime{})}
)

// named makes the component of a named struct type and returns its name:
// ours under openAPISchemaPrefix, Kubernetes' own as Kubernetes names them
// ("io.k8s.api.core.v1.HTTPGetAction", apart from our HTTPGetAction).
func (g *schemaGen) named(t reflect.Type) string {
	name := openAPISchemaPrefix + t.Name()
	if host, rest, ok := strings.Cut(t.PkgPath(), "/"); ok && strings.Contains(host, ".") && !strings.HasPrefix(t.PkgPath(), "minik8s/") {
		labels := strings.Split(host, ".")
		slices.Reverse(labels)
		name = strings.Join(labels, ".") + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
	}
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
		if why, ok := notActedOn[fieldKey{t, name}]; ok {
			props[name] = described(props[name].(map[string]any), "minik8s stores this field and does not act on it: "+why+".")
		}
	}
}

// fieldKey is a field of a struct type, by its JSON name.
type fieldKey struct {
	in   reflect.Type
	name string
}

// notActedOn is validation.NotActedOn by field, for kubectl explain.
var notActedOn = func() map[fieldKey]string {
	m := map[fieldKey]string{}
	for _, f := range validation.NotActedOn {
		m[fieldKey{f.In, f.Field}] = f.Why
	}
	return m
}()

// described adds a description to a property's schema; one that is a
// reference is wrapped in allOf, as Kubernetes does, since siblings of a
// $ref are ignored.
func described(s map[string]any, desc string) map[string]any {
	if _, ok := s["$ref"]; ok {
		s = map[string]any{"allOf": []any{s}}
	}
	s["description"] = desc
	return s
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if slices.Contains(microTimeTypes, t) {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t {
	case timeType, metaTimeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case quantityType:
		const name = "io.k8s.apimachinery.pkg.api.resource.Quantity"
		g.schemas[name] = map[string]any{"type": "string"}
		return map[string]any{"allOf": []any{map[string]any{"$ref": g.refPrefix + name}}}
	case intOrStringType, k8sIntOrStringType:
		// As Kubernetes describes it (kubectl explain says <IntOrString>).
		const name = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
		g.schemas[name] = map[string]any{"format": "int-or-string", "x-kubernetes-int-or-string": true}
		return map[string]any{"allOf": []any{map[string]any{"$ref": g.refPrefix + name}}}
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
		return map[string]any{"$ref": g.refPrefix + g.named(t)}
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
