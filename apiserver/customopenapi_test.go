package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"minik8s/apiserver/customresource"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
)

func crontabCRD(preserve bool) *api.CustomResourceDefinition {
	spec := apiextv1.JSONSchemaProps{Type: "object", Description: "The desired schedule.",
		Properties: map[string]apiextv1.JSONSchemaProps{
			"cronSpec": {Type: "string", Description: "When to run, in cron's format."},
			"replicas": {Type: "integer"},
		}}
	if preserve {
		yes := true
		spec.XPreserveUnknownFields = &yes
	}
	names := apiextv1.CustomResourceDefinitionNames{Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList"}
	return &api.CustomResourceDefinition{ObjectMeta: api.ObjectMeta{Name: "crontabs.stable.example.com"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Group: "stable.example.com", Names: names, Scope: apiextv1.NamespaceScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{"spec": spec}}}}}},
		Status: apiextv1.CustomResourceDefinitionStatus{AcceptedNames: names}}
}

// TestCustomOpenAPI: a served definition's kind appears in /openapi/v3
// (its group version listed with a hash, its schema marked with its
// kind) and /openapi/v2, a changed definition changes the hash (and an
// old hash is redirected to the new one), and a definition gone takes
// its kind out.
func TestCustomOpenAPI(t *testing.T) {
	o := newOpenAPI()
	gin.SetMode(gin.ReleaseMode)
	eng := gin.New()
	eng.Use(errorMiddleware())
	o.routes(newRouter(eng))
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		eng.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	index := func() map[string]string {
		var idx struct {
			Paths map[string]struct {
				URL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(get("/openapi/v3").Body.Bytes(), &idx); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for gv, p := range idx.Paths {
			out[gv] = p.URL
		}
		return out
	}
	const gv = "apis/stable.example.com/v1"
	builtins := len(index())
	if _, ok := index()[gv]; ok {
		t.Fatalf("%s listed before its definition", gv)
	}

	if err := o.setCustom([]*api.CustomResourceDefinition{crontabCRD(false)}); err != nil {
		t.Fatal(err)
	}
	url := index()[gv]
	if !strings.HasPrefix(url, "/openapi/v3/"+gv+"?hash=") || len(index()) != builtins+1 {
		t.Fatalf("index entry %q (%d group versions, want %d)", url, len(index()), builtins+1)
	}
	w := get(url)
	doc := w.Body.String()
	if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "public, immutable" {
		t.Fatalf("GET %s: %d %v", url, w.Code, w.Header())
	}
	for _, want := range []string{`"com.example.stable.v1.CronTab"`, `"com.example.stable.v1.CronTabList"`, `"x-kubernetes-group-version-kind"`,
		`"kind":"CronTab"`, "When to run, in cron's format.", `"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"`,
		`"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"`, `"fieldValidation"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("the v3 document lacks %s", want)
		}
	}
	if v2 := get("/openapi/v2").Body.String(); !strings.Contains(v2, `"com.example.stable.v1.CronTab"`) || !strings.Contains(v2, `"io.minik8s.api.Pod"`) {
		t.Errorf("the v2 document lacks the custom kind or the built-in ones")
	}
	if err := o.setCustom([]*api.CustomResourceDefinition{crontabCRD(true)}); err != nil {
		t.Fatal(err)
	}
	next := index()[gv]
	if next == url {
		t.Errorf("the hash did not change with the definition")
	}
	if w := get(url); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != next {
		t.Errorf("GET of the old hash: %d %q, want a redirect to %s", w.Code, w.Header().Get("Location"), next)
	}
	if !strings.Contains(get(next).Body.String(), `"x-kubernetes-preserve-unknown-fields":true`) {
		t.Errorf("the new document lacks the preserved fields")
	}

	if err := o.setCustom(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := index()[gv]; ok || len(index()) != builtins {
		t.Errorf("%s still listed after its definition went", gv)
	}
	if w := get("/openapi/v3/" + gv); w.Code != http.StatusNotFound {
		t.Errorf("GET of the gone document: %d", w.Code)
	}
	if v2 := get("/openapi/v2").Body.String(); strings.Contains(v2, "com.example.stable.v1.CronTab") {
		t.Errorf("the v2 document keeps the gone kind")
	}
}

// TestCustomFields: a custom kind's fields its schema does not declare
// are refused under Strict, warned of under Warn, let be under Ignore; a
// preserved object has none, and a built-in kind (no schema) none.
func TestCustomFields(t *testing.T) {
	obj := &api.CustomObject{}
	if err := json.Unmarshal([]byte(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":{"cronSpec":"x","image":"y"}}`), obj); err != nil {
		t.Fatal(err)
	}
	handlersOf := func(crd *api.CustomResourceDefinition) *handlers {
		schema, err := customresource.NewSchema(crd.Spec.Versions[0].Schema)
		if err != nil {
			t.Fatal(err)
		}
		return &handlers{reg: &registry.Store{Schema: schema}}
	}
	for _, tc := range []struct {
		name, mode string
		h          *handlers
		warnings   int
		err        string
	}{
		{"strict", validationStrict, handlersOf(crontabCRD(false)), 0, `strict decoding error: unknown field "spec.image"`},
		{"warn", validationWarn, handlersOf(crontabCRD(false)), 1, ""},
		{"ignore", validationIgnore, handlersOf(crontabCRD(false)), 0, ""},
		{"preserved", validationStrict, handlersOf(crontabCRD(true)), 0, ""},
		{"no schema", validationStrict, &handlers{reg: &registry.Store{}}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warnings, err := tc.h.customFields(obj, tc.mode)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if len(warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", warnings, tc.warnings)
			}
		})
	}
}
