package apiserver

import (
	"net/http/httptest"
	"reflect"
	"testing"

	"minik8s/pkg/rbac"
)

func TestRequestAttributes(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           rbac.Attributes
	}{
		{"GET", "/api/v1/namespaces/default/pods", rbac.Attributes{Verb: "list", Resource: "pods", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/default/pods?watch=true", rbac.Attributes{Verb: "watch", Resource: "pods", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/ns1/pods/web/log", rbac.Attributes{Verb: "get", Resource: "pods", Subresource: "log", Name: "web", Namespace: "ns1", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/ns1/pods/web/exec?command=sh", rbac.Attributes{Verb: "create", Resource: "pods", Subresource: "exec", Name: "web", Namespace: "ns1", ResourceRequest: true}},
		{"GET", "/apis/minik8s.io/v1/namespaces/ns1/funcs/f", rbac.Attributes{Verb: "get", APIGroup: "minik8s.io", Resource: "funcs", Name: "f", Namespace: "ns1", ResourceRequest: true}},
		{"PUT", "/api/v1/nodes/n1/status", rbac.Attributes{Verb: "update", Resource: "nodes", Subresource: "status", Name: "n1", ResourceRequest: true}},
		{"GET", "/api/v1/pods", rbac.Attributes{Verb: "list", Resource: "pods", ResourceRequest: true}},
		{"DELETE", "/api/v1/namespaces/team", rbac.Attributes{Verb: "delete", Resource: "namespaces", Name: "team", Namespace: "team", ResourceRequest: true}},
		{"PUT", "/api/v1/namespaces/team/finalize", rbac.Attributes{Verb: "update", Resource: "namespaces", Subresource: "finalize", Name: "team", Namespace: "team", ResourceRequest: true}},
		{"POST", "/apis/apps/v1/namespaces/default/replicasets", rbac.Attributes{Verb: "create", APIGroup: "apps", Resource: "replicasets", Namespace: "default", ResourceRequest: true}},
		{"PUT", "/apis/apps/v1/namespaces/default/replicasets/rs/scale", rbac.Attributes{Verb: "update", APIGroup: "apps", Resource: "replicasets", Subresource: "scale", Name: "rs", Namespace: "default", ResourceRequest: true}},
		{"DELETE", "/api/v1/namespaces/default/configmaps", rbac.Attributes{Verb: "deletecollection", Resource: "configmaps", Namespace: "default", ResourceRequest: true}},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", rbac.Attributes{Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", ResourceRequest: true}},
		{"GET", "/healthz", rbac.Attributes{Verb: "get"}},
		{"GET", "/metrics", rbac.Attributes{Verb: "get"}},
		// The function API.
		{"POST", "/api/funcs/template", rbac.Attributes{Verb: "create", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"POST", "/api/funcs/template/", rbac.Attributes{Verb: "create", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/funcs/template", rbac.Attributes{Verb: "list", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/funcs/template?watch=true", rbac.Attributes{Verb: "watch", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"DELETE", "/api/funcs/template/hello", rbac.Attributes{Verb: "delete", Resource: "funcs", Name: "hello", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/watch/funcs/template/hello", rbac.Attributes{Verb: "watch", Resource: "funcs", Name: "hello", Namespace: "default", ResourceRequest: true}},
		{"POST", "/api/funcs/hello?namespace=team", rbac.Attributes{Verb: "create", Resource: "funcs", Subresource: "invoke", Name: "hello", Namespace: "team", ResourceRequest: true}},
		{"GET", "/api/funcs/0b7c", rbac.Attributes{Verb: "get", Resource: "funcinstances", Name: "0b7c", Namespace: "default", ResourceRequest: true}},
		{"PUT", "/api/funcs/RETURN/0b7c", rbac.Attributes{Verb: "update", Resource: "funcinstances", Name: "0b7c", Namespace: "default", ResourceRequest: true}},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		got := requestAttributes(r)
		tc.want.Path = r.URL.Path
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s:\n got  %+v\n want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}
