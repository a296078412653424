package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Every query parameter, good and bad, with the status Kubernetes gives:
// 400 for a value that does not decode (naming the parameter), 422 for
// options that do not hold together (in apimachinery's words), and what
// a valid value does.
func TestQueryParameters(t *testing.T) {
	et := newEngineTest(t)
	et.mustDo("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"obj1"}}`, http.StatusCreated)
	et.mustDo("POST", "/api/funcs/template?namespace=team-a", templateBody("hello", ""), http.StatusCreated)
	rev, err := et.s.store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	now, future := strconv.FormatInt(rev, 10), strconv.FormatInt(rev+1000, 10)
	const (
		cms   = "/api/v1/namespaces/team-a/configmaps"
		cm    = cms + "/obj1"
		pods  = "/api/v1/namespaces/team-a/pods"
		podLg = pods + "/p/log"
		deps  = "/apis/apps/v1/namespaces/team-a/deployments"
	)
	newCM := func(name string) string { return `{"metadata":{"name":"` + name + `"}}` }
	for _, tc := range []struct {
		param, method, target, body string
		code                        int
		says                        string
	}{
		// ListOptions.
		{"limit", "GET", cms + "?limit=10", "", 200, ""},
		{"limit", "GET", cms + "?limit=-1", "", 200, ""},
		{"limit", "GET", cms + "?limit=abc", "", 400, `limit: \"abc\"`},
		{"continue", "GET", cms + "?continue=abc", "", 400, "invalid continue token"},
		{"continue", "GET", cms + "?continue=abc&resourceVersion=5", "", 400, "specifying resource version is not allowed when using continue"},
		{"continue", "GET", cms + "?continue=abc&resourceVersion=5&resourceVersionMatch=NotOlderThan", "", 422, "resourceVersionMatch is forbidden when continue is provided"},
		{"resourceVersion", "GET", cms + "?resourceVersion=0", "", 200, ""},
		{"resourceVersion", "GET", cms + "?resourceVersion=" + now, "", 200, ""},
		{"resourceVersion", "GET", cms + "?resourceVersion=abc", "", 400, "invalid resource version"},
		{"resourceVersion", "GET", cms + "?resourceVersion=-1", "", 400, "invalid resource version"},
		{"resourceVersion", "GET", cms + "?resourceVersion=" + future + "&timeout=1s", "", 504, "Too large resource version: " + future},
		{"resourceVersionMatch", "GET", cms + "?resourceVersion=1&resourceVersionMatch=NotOlderThan", "", 200, ""},
		{"resourceVersionMatch", "GET", cms + "?resourceVersion=" + now + "&resourceVersionMatch=Exact", "", 200, `"resourceVersion":"` + now + `"`},
		{"resourceVersionMatch", "GET", cms + "?resourceVersion=0&resourceVersionMatch=Exact", "", 422, `resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"`},
		{"resourceVersionMatch", "GET", cms + "?resourceVersion=1&resourceVersionMatch=Newest", "", 422, "Unsupported value"},
		{"resourceVersionMatch", "GET", cms + "?resourceVersionMatch=NotOlderThan", "", 422, "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{"timeoutSeconds", "GET", cms + "?timeoutSeconds=5", "", 200, ""},
		{"timeoutSeconds", "GET", cms + "?timeoutSeconds=abc", "", 400, "timeoutSeconds"},
		{"timeoutSeconds", "GET", cms + "?watch=true&timeoutSeconds=-1", "", 200, ""},
		{"watch", "GET", cms + "?watch=false", "", 200, `"kind":"ConfigMapList"`},
		{"watch", "GET", cms + "?watch=0", "", 200, `"kind":"ConfigMapList"`},
		{"watch", "GET", cms + "?watch=1&timeoutSeconds=1", "", 200, `"type":"ADDED"`},
		{"watch", "GET", cms + "?watch=true&resourceVersion=abc", "", 400, "invalid resource version"},
		{"watch", "GET", cms + "?watch=true&resourceVersion=" + future + "&timeoutSeconds=1", "", 504, "Too large resource version: " + future},
		{"allowWatchBookmarks", "GET", cms + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=-1", "", 200, ""},
		{"labelSelector", "GET", cms + "?labelSelector=a%3Db,c!%3Dd", "", 200, ""},
		{"labelSelector", "GET", cms + "?labelSelector=a+in+(b,c)", "", 200, ""},
		{"labelSelector", "GET", cms + "?labelSelector=%00", "", 400, "labelSelector"},
		{"labelSelector", "GET", cms + "?labelSelector=a%3Db%00,c%3Dd", "", 400, "NUL"},
		{"labelSelector", "GET", cms + "?labelSelector=a%3D%3D%3Db", "", 400, "labelSelector"},
		{"labelSelector", "GET", cms + "?labelSelector=a+in+(b", "", 400, "labelSelector"},
		{"labelSelector", "GET", cms + "?labelSelector=" + strings.Repeat("a", 64) + "%3Db", "", 400, "labelSelector"},
		{"fieldSelector", "GET", cms + "?fieldSelector=metadata.name%3Dobj1", "", 200, `"name":"obj1"`},
		{"fieldSelector", "GET", cms + "?fieldSelector=metadata.name!%3Dobj1", "", 200, `"items":[]`},
		{"fieldSelector", "GET", cms + "?fieldSelector=%00", "", 400, "fieldSelector"},
		{"fieldSelector", "GET", cms + "?fieldSelector=metadata.name", "", 400, "fieldSelector"},
		{"sendInitialEvents", "GET", cms + "?sendInitialEvents=true", "", 422, "sendInitialEvents is forbidden for list"},
		{"sendInitialEvents", "GET", cms + "?watch=true&sendInitialEvents=true&timeoutSeconds=1", "", 422, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
		{"sendInitialEvents", "GET", cms + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1", "", 200, "k8s.io/initial-events-end"},
		{"resourceVersionMatch", "GET", cms + "?watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan", "", 422, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
		// GetOptions.
		{"resourceVersion", "GET", cm + "?resourceVersion=" + now, "", 200, ""},
		{"resourceVersion", "GET", cm + "?resourceVersion=abc", "", 400, "invalid resource version"},
		{"resourceVersion", "GET", cm + "?resourceVersion=" + future + "&timeout=1s", "", 504, "Too large resource version"},
		{"timeout", "GET", cm + "?timeout=5s", "", 200, ""},
		{"timeout", "GET", cm + "?timeout=abc", "", 400, "invalid timeout specified in the request URL"},
		// CreateOptions, UpdateOptions, PatchOptions.
		{"dryRun", "POST", cms + "?dryRun=All", newCM("dry"), 201, ""},
		{"dryRun", "POST", cms + "?dryRun=bogus", newCM("dry2"), 422, "dryRun"},
		{"fieldManager", "POST", cms + "?fieldManager=mgr", newCM("fm1"), 201, ""},
		{"fieldManager", "POST", cms + "?fieldManager=" + strings.Repeat("m", 129), newCM("fm2"), 422, "fieldManager"},
		{"fieldManager", "POST", cms + "?fieldManager=a%01b", newCM("fm3"), 422, "invalid character"},
		{"fieldValidation", "POST", cms + "?fieldValidation=Strict", newCM("fv1"), 201, ""},
		{"fieldValidation", "POST", cms + "?fieldValidation=Bogus", newCM("fv2"), 422, "fieldValidation"},
		{"dryRun", "PUT", cm + "?dryRun=bogus", newCM("obj1"), 422, "dryRun"},
		{"fieldValidation", "PUT", cm + "?fieldValidation=Bogus", newCM("obj1"), 422, "fieldValidation"},
		{"force", "PATCH", cm + "?force=true", `{"metadata":{"labels":{"a":"b"}}}`, 422, "may not be specified for non-apply patch"},
		{"dryRun", "PATCH", cm + "?dryRun=All", `{"metadata":{"labels":{"a":"b"}}}`, 200, ""},
		{"dryRun", "PATCH", cm + "?dryRun=Some", `{"metadata":{"labels":{"a":"b"}}}`, 422, "dryRun"},
		// DeleteOptions, in the query and in the body.
		{"gracePeriodSeconds", "DELETE", cm + "?gracePeriodSeconds=abc", "", 400, "gracePeriodSeconds"},
		{"propagationPolicy", "DELETE", cm + "?propagationPolicy=Bogus", "", 422, "propagationPolicy"},
		{"orphanDependents", "DELETE", cm + "?orphanDependents=true&propagationPolicy=Orphan", "", 422, "orphanDependents and deletionPropagation cannot be both set"},
		{"dryRun", "DELETE", cm + "?dryRun=bogus", "", 422, "dryRun"},
		{"body", "DELETE", cm, `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Bogus"}`, 422, "propagationPolicy"},
		{"body", "DELETE", cm, `{"gracePeriodSeconds":"soon"}`, 400, ""},
		{"body", "DELETE", cm, `{"kind":"Pod"}`, 400, "cannot be converted to DeleteOptions"},
		// Kubernetes answers a precondition that does not hold with 409.
		{"preconditions", "DELETE", cm, `{"preconditions":{"resourceVersion":"abc"}}`, 409, ""},
		{"dryRun", "DELETE", cm + "?dryRun=All&gracePeriodSeconds=-1&propagationPolicy=Background", "", 200, ""},
		{"orphanDependents", "DELETE", deps + "/none?orphanDependents=true", "", 404, ""},
		// A pod's log, exec and port-forward.
		{"tailLines", "GET", podLg + "?tailLines=-1", "", 422, "tailLines"},
		{"tailLines", "GET", podLg + "?tailLines=x", "", 400, "tailLines"},
		{"limitBytes", "GET", podLg + "?limitBytes=0", "", 422, "limitBytes"},
		{"sinceSeconds", "GET", podLg + "?sinceSeconds=0", "", 422, "sinceSeconds"},
		{"sinceTime", "GET", podLg + "?sinceTime=yesterday", "", 400, "sinceTime"},
		{"sinceTime", "GET", podLg + "?sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z", "", 422, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{"stream", "GET", podLg + "?stream=All", "", 422, "stream"},
		{"container", "GET", podLg + "?container=c&follow=true&timestamps=true&tailLines=5", "", 404, `\"p\" not found`},
		{"ports", "POST", pods + "/p/portforward?ports=x", "", 400, "ports"},
		{"command", "POST", pods + "/p/exec?command=ls&stdout=1", "", 404, ""},
		// The function API's own.
		{"wait", "POST", "/api/funcs/hello?namespace=team-a&wait=abc", "x", 400, "wait"},
		{"wait", "POST", "/api/funcs/hello?namespace=team-a&wait=-1s", "x", 400, "wait"},
		{"wait", "POST", "/api/funcs/hello?namespace=team-a&wait=11m", "x", 400, "wait"},
		{"wait", "POST", "/api/funcs/hello?namespace=team-a&wait=999999999999", "x", 400, "wait"},
		{"wait", "PUT", "/api/funcs/RETURN/i?namespace=team-a&wait=abc", "x", 400, "wait"},
		{"namespace", "GET", "/api/funcs/template?namespace=A_B", "", 400, "namespace"},
		{"namespace", "GET", "/api/funcs/template?namespace=team-a&namespace=team-b", "", 400, "namespace"},
		{"namespace", "GET", "/api/funcs/template?namespace=team-a", "", 200, `"name":"hello"`},
		{"labelSelector", "GET", "/api/funcs/template?namespace=team-a&labelSelector=%00", "", 400, "labelSelector"},
		{"watch", "GET", "/api/funcs/template?namespace=team-a&watch=true&timeoutSeconds=1", "", 200, `"type":"ADDED"`},
		{"resourceVersion", "GET", "/api/watch/funcs/template?namespace=team-a&resourceVersion=abc", "", 400, "invalid resource version"},
		{"dryRun", "DELETE", "/api/funcs/template/hello?namespace=team-a&dryRun=bogus", "", 422, "dryRun"},
		// The resource metrics API lists with ListOptions too.
		{"labelSelector", "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/team-a/pods?labelSelector=%00", "", 400, "labelSelector"},
	} {
		ct := ""
		switch {
		case tc.method == "PATCH":
			ct = mergePatchType
		case tc.body != "":
			ct = "application/json"
		}
		a := et.doType(tc.method, tc.target, tc.body, ct, "")
		if a.code != tc.code || !strings.Contains(a.body, tc.says) {
			t.Errorf("%s: %s %s: %d %s\n want %d saying %q", tc.param, tc.method, tc.target, a.code, a.body, tc.code, tc.says)
		}
		if a.code >= 400 && a.code != 404 && a.code != 409 && len(a.writes()) > 0 {
			t.Errorf("%s: %s %s: refused, yet wrote %v", tc.param, tc.method, tc.target, a.writes())
		}
	}
	// What the dry runs and the refused writes left.
	for _, name := range []string{"dry", "dry2", "fm2", "fm3", "fv2"} {
		if a := et.do("GET", cms+"/"+name, "", ""); a.code != http.StatusNotFound {
			t.Errorf("configmap %s: %d, want 404", name, a.code)
		}
	}
	if a := et.do("GET", cm, "", ""); a.code != http.StatusOK {
		t.Errorf("obj1 after dry-run and refused deletes: %d %s", a.code, a.body)
	}
}

// A list at an exact version is the objects as they were then.
func TestListAtExactResourceVersion(t *testing.T) {
	et := newEngineTest(t)
	a := et.mustDo("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"before"}}`, http.StatusCreated)
	rv := a.body[strings.Index(a.body, `"resourceVersion":"`)+19:]
	rv = rv[:strings.Index(rv, `"`)]
	et.mustDo("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"after"}}`, http.StatusCreated)
	exact := et.mustDo("GET", "/api/v1/namespaces/team-a/configmaps?resourceVersionMatch=Exact&resourceVersion="+rv, "", http.StatusOK)
	if !strings.Contains(exact.body, `"name":"before"`) || strings.Contains(exact.body, `"name":"after"`) {
		t.Errorf("list at %s: %s, want before and not after", rv, exact.body)
	}
	latest := et.mustDo("GET", "/api/v1/namespaces/team-a/configmaps?resourceVersionMatch=NotOlderThan&resourceVersion="+rv, "", http.StatusOK)
	if !strings.Contains(latest.body, `"name":"after"`) {
		t.Errorf("list not older than %s: %s, want after too", rv, latest.body)
	}
}
