package test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/funcrunner"
	"minik8s/mkctl"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// Tokens of the secure-port tests, in the static token file format.
const secureTokens = `viewer-token,viewer,u1
nobody-token,nobody,u2
invoker-a-token,invoker-a,u3
invoker-b-token,invoker-b,u4
editor-token,editor,u5,"team-a,team-b"
`

// caller sends requests to the secure port with one bearer token (none
// when empty), trusting the cluster CA.
type caller struct {
	t     *testing.T
	base  string
	token string
	hc    *http.Client
}

func newCaller(t *testing.T, s *framework.APIServer, token string) *caller {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", apiserver.CAFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &caller{t: t, base: s.SecureURL, token: token, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

func (c *caller) do(method, path, body string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// expect checks a request's status and that the answer says want.
func (c *caller) expect(method, path, body string, status int, want string) []byte {
	c.t.Helper()
	code, data := c.do(method, path, body)
	if code != status || !strings.Contains(string(data), want) {
		c.t.Errorf("%s %s as %q: %d %s, want %d containing %q", method, path, c.token, code, bytes.TrimSpace(data), status, want)
	}
	return data
}

// TestSecurePortAuthentication: the served certificate verifies against
// DATA/ca.crt, plain HTTP gets nothing, every route answers 401 without
// credentials or with a wrong token, and the admin kubeconfig works.
func TestSecurePortAuthentication(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens)
	addr := strings.TrimPrefix(s.SecureURL, "https://")

	pem, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	for _, name := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc"} {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: name})
		if err != nil {
			t.Errorf("TLS to %s as %s, verified against %s: %v", addr, name, apiserver.CAFile, err)
			continue
		}
		conn.Close()
	}
	if conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}); err == nil {
		conn.Close()
		t.Errorf("the served certificate verified against an empty pool")
	}

	// Plain HTTP to the secure port.
	resp, err := http.Get("http://" + addr + "/api/v1/namespaces")
	if err == nil {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || strings.Contains(string(data), "items") {
			t.Errorf("plain HTTP to the secure port: %s %s", resp.Status, data)
		}
	}

	anon, wrong := newCaller(t, s, ""), newCaller(t, s, "not-a-token")
	routes := [][2]string{
		{"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/livez"}, {"GET", "/metrics"},
		{"GET", "/api/funcs/template"}, {"POST", "/api/funcs/template"}, {"GET", "/api/funcs/template/f"},
		{"POST", "/api/funcs/f"}, {"GET", "/api/funcs/some-id"}, {"PUT", "/api/funcs/RETURN/some-id"},
		{"GET", "/api/watch/funcs/template"}, {"GET", "/api/v1/namespaces/default/pods/p/log"},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"}, {"GET", "/no/such/route"},
	}
	for _, res := range api.Resources {
		coll := res.Prefix() + "/" + res.Name
		if res.Namespaced {
			routes = append(routes, [2]string{"GET", coll})
			coll = res.Prefix() + "/namespaces/default/" + res.Name
		}
		routes = append(routes, [2]string{"GET", coll}, [2]string{"POST", coll}, [2]string{"GET", coll + "/x"},
			[2]string{"PUT", coll + "/x"}, [2]string{"DELETE", coll + "/x"}, [2]string{"GET", coll + "?watch=true"})
	}
	for _, r := range routes {
		anon.expect(r[0], r[1], "{}", http.StatusUnauthorized, "no credentials")
		wrong.expect(r[0], r[1], "{}", http.StatusUnauthorized, "not valid")
	}
	// The CA is public: a joining node checks it against its token.
	if data := anon.expect("GET", "/cacerts", "", http.StatusOK, "BEGIN CERTIFICATE"); !bytes.Equal(data, pem) {
		t.Errorf("/cacerts is not %s", apiserver.CAFile)
	}

	// The admin kubeconfig, as kubectl reads it.
	cfg, err := client.LoadKubeconfig(filepath.Join(s.DataDir, apiserver.AdminKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server != s.SecureURL || len(cfg.CertData) == 0 || len(cfg.CAData) == 0 {
		t.Fatalf("admin kubeconfig: server %q, cert %d bytes, CA %d bytes", cfg.Server, len(cfg.CertData), len(cfg.CAData))
	}
	admin, err := client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "by-admin"}, Data: map[string]string{"k": "v"}}
	if _, err := admin.ConfigMaps("default").Create(ctx, cm); err != nil {
		t.Fatalf("create as the admin: %v", err)
	}
	if got, err := admin.ConfigMaps("default").Get(ctx, "by-admin"); err != nil || got.Data["k"] != "v" {
		t.Fatalf("get as the admin: %v %v", got, err)
	}
	if err := admin.Healthy(ctx); err != nil {
		t.Errorf("/healthz as the admin: %v", err)
	}

	// The kubernetes Service points at the secure port.
	_, port, _ := net.SplitHostPort(addr)
	deadline := time.Now().Add(10 * time.Second)
	for {
		svc, err := admin.Services("default").Get(ctx, "kubernetes")
		ep, eerr := admin.Endpoints("default").Get(ctx, "kubernetes")
		if err == nil && eerr == nil && len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Port == 443 && svc.Spec.ClusterIP == s.ServiceIP("0.1") &&
			len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1 && strconv.Itoa(int(ep.Subsets[0].Addresses[0].Port)) == port {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kubernetes Service: %+v %v; endpoints %+v %v", svc, err, ep, eerr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLocalPortLoopbackOnly: the local port acts as the admin, so it may
// bind only a loopback address.
func TestLocalPortLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		err := apiserver.Run(context.Background(), apiserver.Config{Address: addr, DataDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("local port on %q: %v, want a refusal naming loopback", addr, err)
		}
	}
}

// TestLocalPortRefusesWebPagesOfOtherSites: a page of another site can
// make the browser POST text to 127.0.0.1:8080 without asking, or reach
// it through a name of its own that resolves there (DNS rebinding); the
// local port, which acts as the admin, refuses both, and takes programs
// (no Origin) and its own dashboard (same origin). Text is not an object
// whoever sends it (415).
func TestLocalPortRefusesWebPagesOfOtherSites(t *testing.T) {
	s := framework.StartAPIServer(t)
	pod := `{"metadata":{"name":"planted"},"spec":{"containers":[{"name":"c","image":"x"}]}}`
	for _, tc := range []struct {
		name, host, origin, ctype string
		code                      int
	}{
		{"a program", "", "", "application/json", http.StatusCreated},
		{"a program sending text", "", "", "text/plain", http.StatusUnsupportedMediaType},
		{"another site's page", "", "http://elsewhere.example", "text/plain", http.StatusForbidden},
		{"a sandboxed page", "", "null", "text/plain", http.StatusForbidden},
		{"a rebound name", "elsewhere.example", "http://elsewhere.example", "text/plain", http.StatusForbidden},
		{"the dashboard", "", s.URL, "application/json", http.StatusCreated},
		{"localhost", "localhost", "", "application/json", http.StatusCreated},
	} {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/namespaces/default/pods", strings.NewReader(pod))
		req.Header.Set("Content-Type", tc.ctype)
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %s %s, want %d", tc.name, resp.Status, data, tc.code)
		}
		if resp.StatusCode == http.StatusCreated {
			if _, err := s.Client.Pods("default").Delete(context.Background(), "planted", client.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func rbacObject(t *testing.T, s *framework.APIServer, path string, obj any) {
	t.Helper()
	body, _ := json.Marshal(obj)
	if code, data := httpDo(t, "POST", s.URL+"/apis/rbac.authorization.k8s.io/v1"+path, "application/json", body); code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, code, data)
	}
}

func binding(kind, ns, name, roleKind, role string, subjects ...api.Subject) map[string]any {
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	return map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
		"subjects": subjects, "roleRef": map[string]any{"apiGroup": api.RBACGroup, "kind": roleKind, "name": role}}
}

func userSubject(name string) api.Subject {
	return api.Subject{Kind: api.UserKind, APIGroup: api.RBACGroup, Name: name}
}

// TestRBACRoles: view reads and is refused writes, a user without roles
// is refused (403 naming user, verb and resource), nothing refused is
// written, access reviews answer, a changed binding takes effect, and
// every write is in the audit log.
func TestRBACRoles(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens)
	rbacObject(t, s, "/clusterrolebindings", binding("ClusterRoleBinding", "", "viewers", "ClusterRole", "view", userSubject("viewer")))
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "team-a-edit", "ClusterRole", "edit",
		api.Subject{Kind: api.GroupKind, APIGroup: api.RBACGroup, Name: "team-a"}))
	viewer, nobody, editor := newCaller(t, s, "viewer-token"), newCaller(t, s, "nobody-token"), newCaller(t, s, "editor-token")
	cms := "/api/v1/namespaces/default/configmaps"
	cm := `{"metadata":{"name":"refused"},"data":{"a":"b"}}`

	waitAllowed(t, viewer, "GET", cms)
	viewer.expect("GET", "/api/v1/nodes", "", http.StatusOK, "items")
	viewer.expect("POST", cms, cm, http.StatusForbidden,
		`User \"viewer\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\"`)
	viewer.expect("GET", "/api/v1/namespaces/default/secrets", "", http.StatusForbidden, `cannot list resource \"secrets\"`)
	viewer.expect("DELETE", "/api/v1/namespaces/default/serviceaccounts/default", "", http.StatusForbidden,
		`serviceaccounts \"default\" is forbidden: User \"viewer\" cannot delete`)
	viewer.expect("PUT", "/api/v1/nodes/n1/status", `{"metadata":{"name":"n1"}}`, http.StatusForbidden, `cannot update resource \"nodes/status\"`)
	nobody.expect("GET", "/api/v1/namespaces/default/pods", "", http.StatusForbidden,
		`User \"nobody\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"`)
	nobody.expect("GET", "/api/funcs/template", "", http.StatusForbidden, `cannot list resource \"funcs\"`)
	if code, data := httpDo(t, "GET", s.URL+cms+"/refused", "", nil); code != http.StatusNotFound {
		t.Errorf("a refused create wrote something: %d %s", code, data)
	}

	// edit through a group of the token file, in default only.
	waitAllowed(t, editor, "GET", "/api/v1/namespaces/default/secrets")
	editor.expect("POST", cms, `{"metadata":{"name":"edited"}}`, http.StatusCreated, "edited")
	editor.expect("POST", "/api/v1/namespaces/kube-system/configmaps", `{"metadata":{"name":"edited"}}`, http.StatusForbidden,
		`in the namespace \"kube-system\"`)
	editor.expect("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
		`{"metadata":{"name":"x"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`,
		http.StatusForbidden, `cannot create resource \"rolebindings\"`)

	// An admin of the namespace grants only what it holds.
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "team-b-admin", "ClusterRole", "admin",
		api.Subject{Kind: api.GroupKind, APIGroup: api.RBACGroup, Name: "team-b"}))
	waitAllowed(t, editor, "GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings")
	rbs := "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
	editor.expect("POST", rbs, `{"metadata":{"name":"up"},"subjects":[{"kind":"User","name":"editor"}],`+
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`,
		http.StatusForbidden, `rolebindings \"up\" is forbidden: User \"editor\" may not grant what it does not hold`)
	editor.expect("POST", rbs, `{"metadata":{"name":"viewers"},"subjects":[{"kind":"User","name":"someone-else"}],`+
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}`, http.StatusCreated, "viewers")
	roles := "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
	editor.expect("POST", roles, `{"metadata":{"name":"all"},"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`,
		http.StatusForbidden, "may not grant what it does not hold")
	editor.expect("POST", roles, `{"metadata":{"name":"cm-reader"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`,
		http.StatusCreated, "cm-reader")

	// kubectl auth can-i.
	review := func(c *caller, verb, resource string) bool {
		body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"default","verb":"` +
			verb + `","resource":"` + resource + `"}}}`
		data := c.expect("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, http.StatusCreated, "status")
		var r api.SelfSubjectAccessReview
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	if !review(viewer, "list", "pods") || review(viewer, "create", "pods") || review(nobody, "get", "pods") || !review(editor, "create", "pods") {
		t.Errorf("access reviews: viewer list pods, not create; nobody nothing; editor create")
	}

	// mkctl auth can-i, with a kubeconfig of the viewer's token.
	caPEM, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	if err := client.WriteKubeconfig(kc, "viewer", client.Config{Server: s.SecureURL, CAData: caPEM, Token: "viewer-token"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"list", "pods"}, 0, "yes"}, {[]string{"create", "pods"}, 1, "no"}, {[]string{"get", "secrets", "x"}, 1, "no"},
	} {
		var out, errOut bytes.Buffer
		code := mkctl.Run(context.Background(), append([]string{"--kubeconfig", kc, "auth", "can-i"}, tc.args...), &out, &errOut)
		if code != tc.code || strings.TrimSpace(out.String()) != tc.out {
			t.Errorf("mkctl auth can-i %v: %d %q %q, want %d %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.out)
		}
	}

	// Taking the binding away takes the access away.
	if code, data := httpDo(t, "DELETE", s.URL+"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/viewers", "", nil); code != http.StatusOK {
		t.Fatalf("delete binding: %d %s", code, data)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := viewer.do("GET", cms, "")
		if code == http.StatusForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the viewer still reads 10s after its binding was deleted: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The audit log has the writes, refused ones too, with user and
	// outcome (within its flush interval).
	waitUntil(t, 10*time.Second, "the writes in the audit log", func() bool {
		missing := auditMissing(t, filepath.Join(s.DataDir, apiserver.AuditLogFile),
			"viewer create configmaps 403", "editor create configmaps 201", "system:admin delete clusterrolebindings 200")
		if len(missing) > 0 {
			t.Logf("audit log has no %q yet", missing)
		}
		return len(missing) == 0
	})
}

// auditMissing lists the "user verb resource code" events path lacks; a
// read in it fails the test.
func auditMissing(t *testing.T, path string, want ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			Verb      string `json:"verb"`
			User      struct{ Username string }
			ObjectRef struct{ Resource, Namespace, Name string }
			Response  struct{ Code int } `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %s: %v", sc.Text(), err)
		}
		if ev.Verb == "get" || ev.Verb == "list" {
			t.Fatalf("a read in the audit log: %s", sc.Text())
		}
		seen[strings.Join([]string{ev.User.Username, ev.Verb, ev.ObjectRef.Resource, strconv.Itoa(ev.Response.Code)}, " ")] = true
	}
	var missing []string
	for _, w := range want {
		if !seen[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

// waitAllowed waits for a new binding to reach the authorizer.
func waitAllowed(t *testing.T, c *caller, method, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, data := c.do(method, path, "")
		if code < 300 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s as %q: %d %s after 10s", method, path, c.token, code, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFunctionInvokerOwnInstances: a function-invoker calls functions and
// reads only the instances it started; it cannot change templates.
func TestFunctionInvokerOwnInstances(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens)
	framework.StartFuncRunner(t, s)
	code := "def run(arg):\n    return 'r:' + arg\n"
	funcTemplate(t, s, "echo", code, "RETURN", "RETURN", nil)
	publish(t, s, "echo", runtime(t, code))
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "invokers", "ClusterRole", "function-invoker",
		userSubject("invoker-a"), userSubject("invoker-b")))
	a, b := newCaller(t, s, "invoker-a-token"), newCaller(t, s, "invoker-b-token")
	waitAllowed(t, a, "GET", "/api/funcs/template")

	var sync api.FuncInstanceView
	if err := json.Unmarshal(a.expect("POST", "/api/funcs/echo?wait=30s", "hi", http.StatusOK, "r:hi"), &sync); err != nil {
		t.Fatal(err)
	}
	var async struct{ InstanceID string }
	if err := json.Unmarshal(a.expect("POST", "/api/funcs/echo", "there", http.StatusAccepted, "instanceId"), &async); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{sync.InstanceID, async.InstanceID} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, data := a.do("GET", "/api/funcs/"+id, "")
			if code == http.StatusOK && strings.Contains(string(data), api.InstanceSucceeded) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("invoker-a reading its instance %s: %d %s", id, code, data)
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.expect("GET", "/api/funcs/"+id, "", http.StatusForbidden, `User \"invoker-b\" may read and step only the function instances it started`)
		b.expect("PUT", "/api/funcs/RETURN/"+id, "forged", http.StatusForbidden, "only the function instances it started")
	}
	// Lists show each its own.
	list := func(c *caller) []string {
		var l api.FuncInstanceList
		if err := json.Unmarshal(c.expect("GET", "/api/v1/namespaces/default/funcinstances", "", http.StatusOK, "items"), &l); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, i := range l.Items {
			names = append(names, i.Name+"/"+i.Spec.User)
		}
		return names
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(list(a)) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("invoker-a lists %v, want its 2 instances", list(a))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, n := range list(a) {
		if !strings.HasSuffix(n, "/invoker-a") {
			t.Errorf("invoker-a lists %s", n)
		}
	}
	if got := list(b); len(got) != 0 {
		t.Errorf("invoker-b lists %v, want none", got)
	}
	for _, id := range []string{sync.InstanceID, async.InstanceID} {
		b.expect("GET", "/api/v1/namespaces/default/funcinstances/"+id, "", http.StatusForbidden, "only the function instances it started")
		a.expect("GET", "/api/v1/namespaces/default/funcinstances/"+id, "", http.StatusOK, id)
	}
	a.expect("POST", "/api/funcs/template", `{"metadata":{"name":"x"}}`, http.StatusForbidden, `cannot create resource \"funcs\"`)
	a.expect("DELETE", "/api/funcs/template/echo", "", http.StatusForbidden, `cannot delete resource \"funcs\"`)
	a.expect("GET", "/api/v1/namespaces/default/pods", "", http.StatusForbidden, `User \"invoker-a\" cannot list resource \"pods\"`)
	a.expect("POST", "/api/funcs/echo?namespace=kube-system", "x", http.StatusForbidden, `in the namespace \"kube-system\"`)

	// An id alone finds its call in any namespace its reader may read; in
	// one it may not, it is not found, as an unknown id is.
	ctx := context.Background()
	if _, err := s.Client.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "audit"}}); err != nil {
		t.Fatal(err)
	}
	funcTemplateNS(t, s, "audit", "echo")
	audited, err := s.Client.FuncCalls("audit").Invoke(ctx, "echo", []byte("x"), client.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Client.FuncCallsByID().Result(ctx, audited.InstanceID)
	if err != nil || v.Namespace != "audit" || v.Function != "echo" {
		t.Errorf("the admin reading %s by id alone: %+v %v", audited.InstanceID, v, err)
	}
	for _, cmd := range []string{"result", "logs", "trace"} {
		if code, out, errOut := mk(t, "--server", s.URL, "func", cmd, audited.InstanceID); code != 0 {
			t.Errorf("mkctl func %s ID of a call in audit, without -n: %d %s%s", cmd, code, out, errOut)
		}
	}
	a.expect("GET", "/api/funcs/"+audited.InstanceID, "", http.StatusNotFound, "not found (unknown, or expired")
	a.expect("GET", "/api/funcs/"+sync.InstanceID, "", http.StatusOK, `"namespace":"default"`)
	// Every namespace's functions are a list over the cluster.
	a.expect("GET", "/api/funcs?allNamespaces=true", "", http.StatusForbidden, `cannot list resource \"funcs\"`)
}

// TestPrivilegedPodsAdmission: pods (and ReplicaSet templates) that reach
// into the node are admitted only for users allowed to create privileged
// pods, with a 403 that says why; the admin may.
func TestPrivilegedPodsAdmission(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens)
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "team-a-edit", "ClusterRole", "edit",
		api.Subject{Kind: api.GroupKind, APIGroup: api.RBACGroup, Name: "team-a"}))
	editor := newCaller(t, s, "editor-token")
	waitAllowed(t, editor, "GET", "/api/v1/namespaces/default/pods")
	pods, rss := "/api/v1/namespaces/default/pods", "/apis/apps/v1/namespaces/default/replicasets"
	cases := []struct{ name, path, body, why string }{
		{"hostpath", pods, `{"metadata":{"name":"hostpath"},"spec":{"containers":[{"name":"c","image":"i","volumeMounts":[{"name":"root","mountPath":"/host"}]}],` +
			`"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`, `hostPath volume \"root\" (/)`},
		{"hostport", pods, `{"metadata":{"name":"hostport"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"hostPort":80}]}]}}`,
			`host port 80 of container \"c\"`},
		{"hostnet", pods, `{"metadata":{"name":"hostnet"},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"i"}]}}`, "hostNetwork"},
		{"rs", rss, `{"metadata":{"name":"rs"},"spec":{"replicas":1,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},` +
			`"spec":{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"root","hostPath":{"path":"/etc"}}]}}}}`, `hostPath volume \"root\" (/etc)`},
	}
	for _, tc := range cases {
		editor.expect("POST", tc.path, tc.body, http.StatusForbidden, `User \"editor\" may not create privileged pods (`+tc.why)
		if code, data := httpDo(t, "GET", s.URL+tc.path+"/"+tc.name, "", nil); code != http.StatusNotFound {
			t.Errorf("refused %s written: %d %s", tc.name, code, data)
		}
		if code, data := httpDo(t, "POST", s.URL+tc.path, "application/json", []byte(tc.body)); code != http.StatusCreated {
			t.Errorf("the admin creating %s: %d %s", tc.name, code, data)
		}
	}
	// Changing an admitted pod into a privileged one is refused too: as in
	// Kubernetes, by validation (a pod's spec is immutable, 422) before
	// admission would.
	editor.expect("POST", pods, `{"metadata":{"name":"plain"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, http.StatusCreated, "plain")
	var p api.Pod
	if err := json.Unmarshal(editor.expect("GET", pods+"/plain", "", http.StatusOK, "plain"), &p); err != nil {
		t.Fatal(err)
	}
	p.Spec.HostNetwork = true
	body, _ := json.Marshal(p)
	editor.expect("PUT", pods+"/plain", string(body), http.StatusUnprocessableEntity, "pod updates may not change fields")
}

// TestFuncRunnerOverTLS: a runner that reaches the secure port serves the
// calls handed to it over TLS, pinned by the apiserver through its Lease,
// and answers no one but the apiserver.
func TestFuncRunnerOverTLS(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens+"runner-token,system:funcrunner:tls,u9,\"system:funcrunners\"\n")
	rc := s.SecureClient(t, client.Config{Token: "runner-token"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- funcrunner.Run(ctx, funcrunner.Config{Client: rc, Identity: "tls-runner"}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("runner: %v", err)
		}
	})
	var lease *api.Lease
	waitUntil(t, 30*time.Second, "the runner's lease", func() bool {
		l, err := s.Client.Leases(function.RunnerNamespace).Get(context.Background(), function.RunnerLeaseName("tls-runner"))
		lease = l
		return err == nil
	})
	url := lease.Annotations[function.AnnotationRunnerURL]
	if !strings.HasPrefix(url, "https://") || len(lease.Annotations[function.AnnotationRunnerCert]) != 64 {
		t.Fatalf("the runner's lease: url %q, certificate hash %q", url, lease.Annotations[function.AnnotationRunnerCert])
	}
	code := "def run(arg):\n    return 'tls:' + arg\n"
	funcTemplate(t, s, "viatls", code, "RETURN", "RETURN", nil)
	publish(t, s, "viatls", runtime(t, code))
	if status, data := httpDo(t, "POST", s.URL+"/api/funcs/viatls?wait=30s", "text/plain", []byte("x")); status != http.StatusOK ||
		!strings.Contains(string(data), "tls:x") {
		t.Fatalf("a synchronous call handed to the TLS runner: %d %s", status, data)
	}
	// Straight to the runner: plain HTTP and TLS without the apiserver's
	// certificate get nothing.
	target := url + function.RunnerCallPath + "/default/viatls?id=forged&wait=5s"
	if resp, err := http.Post("http"+strings.TrimPrefix(target, "https"), "text/plain", strings.NewReader("x")); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the runner ran a call sent over plain HTTP")
		}
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := insecure.Post(target, "text/plain", strings.NewReader("x")); err == nil {
		resp.Body.Close()
		t.Errorf("the runner answered a client without a certificate: %s", resp.Status)
	}
}
