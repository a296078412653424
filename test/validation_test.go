package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// TestBadObjectsRefused: the bad input an attacker's probe found stored is
// refused over the API as Kubernetes refuses it: 422, the message naming
// the object and every cause, details.causes naming each field, nothing
// written. Every field of every kind is walked by the apiserver's
// TestValidationOfEveryKind; these are the probe's instances, end to end.
func TestBadObjectsRefused(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	p0 := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p0"}, Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "nginx"}}}}
	if _, err := s.Client.Pods("default").Create(ctx, p0); err != nil {
		t.Fatal(err)
	}
	pods := "/api/v1/namespaces/default/pods"
	pod := func(spec string) string {
		return `{"metadata":{"name":"p"},"spec":{` + spec + `}}`
	}
	container := func(fields string) string {
		return pod(`"containers":[{"name":"c","image":"nginx"` + fields + `}]`)
	}
	ports := make([]string, 2000)
	for i := range ports {
		ports[i] = fmt.Sprintf(`{"name":"p%d","port":%d}`, i, 1000+i)
	}
	long := strings.Repeat("a", 254)
	for _, tc := range []struct {
		name, path, body, field, kind string
	}{
		{"label key prefix over 253", pods, `{"metadata":{"name":"p","labels":{"` + long + `/k":"v"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, "metadata.labels", "Pod"},
		{"annotation key with a space", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"c","annotations":{"a b":"v"}}}`, "metadata.annotations", "ConfigMap"},
		{"requests above limits", pods, container(`,"resources":{"limits":{"memory":"64Mi"},"requests":{"memory":"1Gi"}}`), "spec.containers[0].resources.requests", "Pod"},
		{"image with a newline", pods, container(`,"image":"nginx\n"`), "spec.containers[0].image", "Pod"},
		{"nodeName ../../x", pods, pod(`"nodeName":"../../x","containers":[{"name":"c","image":"nginx"}]`), "spec.nodeName", "Pod"},
		{"serviceAccountName a/b", pods, pod(`"serviceAccountName":"a/b","containers":[{"name":"c","image":"nginx"}]`), "spec.serviceAccountName", "Pod"},
		{"secretKeyRef.name a/b", pods, container(`,"env":[{"name":"A","valueFrom":{"secretKeyRef":{"name":"a/b","key":"k"}}}]`), "spec.containers[0].env[0].valueFrom.secretKeyRef.name", "Pod"},
		{"configMapKeyRef.key ../x", pods, container(`,"env":[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"c","key":"../x"}}}]`), "spec.containers[0].env[0].valueFrom.configMapKeyRef.key", "Pod"},
		{"a template's nodeName", "/apis/apps/v1/namespaces/default/deployments",
			`{"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"nodeName":"../../x","containers":[{"name":"c","image":"nginx"}]}}}}`,
			"spec.template.spec.nodeName", "Deployment"},
		{"Service spec null", "/api/v1/namespaces/default/services", `{"metadata":{"name":"s"},"spec":null}`, "spec.ports", "Service"},
		{"2000 node ports", "/api/v1/namespaces/default/services", `{"metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[` + strings.Join(ports, ",") + `]}}`, "spec.ports", "Service"},
		{"binding to ../../x", pods + "/p0/binding", `{"metadata":{"name":"p0"},"target":{"kind":"Node","name":"../../x"}}`, "target.name", "Binding"},
		{"endpoints at the local port", "/api/v1/namespaces/default/endpoints", `{"metadata":{"name":"e"},"subsets":[{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"port":8080}]}]}`, "subsets[0].addresses[0].ip", "Endpoints"},
		{"a function's label", "/api/v1/namespaces/default/funcs", `{"apiVersion":"v2","metadata":{"name":"f","labels":{"a":"no spaces"}},"spec":{"name":"f","function":"ZGVmIHJ1bihhKTogcmV0dXJuIGEK"}}`, "metadata.labels", "Func"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := revision(t, s)
			status, data := httpDo(t, "POST", s.URL+tc.path, "application/json", []byte(tc.body))
			var st api.Status
			if err := json.Unmarshal(data, &st); err != nil || status != http.StatusUnprocessableEntity || st.Reason != "Invalid" {
				t.Fatalf("%d %.400s, want 422 Invalid", status, data)
			}
			if !strings.HasPrefix(st.Message, tc.kind) || !strings.Contains(st.Message, " is invalid: ") || !strings.Contains(st.Message, tc.field+": ") {
				t.Errorf("message %q does not read as Kubernetes' (%s \"…\" is invalid: %s: …)", st.Message, tc.kind, tc.field)
			}
			named := false
			for _, c := range st.Details.Causes {
				named = named || c.Field == tc.field && strings.HasPrefix(c.Type, "FieldValue")
			}
			if !named || st.Details.Kind != tc.kind {
				t.Errorf("details %+v do not name %s of a %s", st.Details, tc.field, tc.kind)
			}
			if after := revision(t, s); after != before {
				t.Errorf("a refused write wrote: revision %s -> %s", before, after)
			}
		})
	}
	if p, err := s.Client.Pods("default").Get(ctx, "p0"); err != nil || p.Spec.NodeName != "" {
		t.Errorf("pod after a refused binding: %+v %v", p, err)
	}
}
