package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
)

// callbackAttempt is a call of relay whose result, the attacker's
// argument, is to be POSTed to url; made names what the body would make
// there if it landed.
type callbackAttempt struct {
	name, url, body string
	made            string // "configmap NAME" (in b) or "clusterrolebinding NAME", or ""
}

// callbackAttempts are the X-Callback-Urls the invoker tries: every
// address of the cluster that trusts the platform, in every spelling,
// with a ConfigMap of b or a binding to cluster-admin as the body where
// the address is the apiserver's.
func (c *attackCluster) callbackAttempts() []callbackAttempt {
	local, secure, etcd := portOf(c.localOnNode1), portOf(c.secureOnNode1), portOf(c.etcdOnNode1)
	const cmPath, crbPath = "/api/v1/namespaces/b/configmaps", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
	var attempts []callbackAttempt
	add := func(name, url, path string) {
		n := len(attempts)
		switch path {
		case cmPath:
			cm := fmt.Sprintf("pwn-cb-%d", n)
			attempts = append(attempts, callbackAttempt{name, url + path, mustJSON(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": cm, "namespace": "b"}, "data": map[string]string{"by": "invoker"}}), "configmap " + cm})
		case crbPath:
			crb := fmt.Sprintf("pwn-crb-%d", n)
			attempts = append(attempts, callbackAttempt{name, url + path, mustJSON(binding("ClusterRoleBinding", "", crb, "ClusterRole", "cluster-admin",
				userSubject(attackInvoker))), "clusterrolebinding " + crb})
		default:
			attempts = append(attempts, callbackAttempt{name: name, url: url + path, body: "pwn"})
		}
	}
	// The local port (the admin) on the runner's machine, in every
	// spelling of loopback, and the machine's own name where it resolves
	// there (the runner reads the machine's /etc/hosts).
	hosts := []string{"localhost", "127.0.0.1", "127.1", "0x7f000001", "2130706433", "0177.0.0.1", "[::1]",
		"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[64:ff9b::127.0.0.1]", "0.0.0.0", "0"}
	if name, err := os.Hostname(); err == nil {
		if addrs, err := net.LookupHost(name); err == nil && len(addrs) > 0 && net.ParseIP(addrs[0]).IsLoopback() {
			hosts = append(hosts, name)
		}
	}
	for _, host := range hosts {
		add("the local port at "+host+" (a ConfigMap of b)", "http://"+host+":"+local, cmPath)
		add("the local port at "+host+" (a binding to cluster-admin)", "http://"+host+":"+local, crbPath)
	}
	add("the secure port on the runner's loopback", "https://localhost:"+secure, crbPath)
	add("the secure port at 127.0.0.1", "https://127.0.0.1:"+secure, cmPath)
	add("the secure port at the apiserver's address", c.server, crbPath)
	add("etcd's client port on the runner's loopback", "https://localhost:"+etcd, "/v3/kv/put")
	add("etcd's client port at 127.0.0.1", "https://127.0.0.1:"+etcd, "/v3/kv/put")
	for node, addr := range c.kubeletAddr {
		add(node+"'s kubelet", "https://"+addr, "/pods")
	}
	add("the runner's port", "https://"+c.runner.Address, function.RunnerCallPath+"/b/secret?id=pwn")
	for what, addr := range c.recv.addr {
		add("a receiver on "+what, "http://"+addr, "/")
	}
	add("a receiver on node 1's loopback, by name", "http://localhost:"+portOf(c.recv.addr["node 1's loopback"]), "/")
	add("the metadata address's well-known URL", "http://169.254.169.254", "/latest/meta-data/")
	add("pod b/sink", "http://"+c.sinkPod+":8080", "/")
	add("Service b/sink", "http://"+c.sinkService, "/")
	add("function relay's Service", "http://"+c.fnService["relay"], function.InvokePath)
	add("function secret's Service", "http://"+c.fnService["secret"], function.InvokePath)
	add("function secret's pod", "http://"+c.fnPod["secret"], function.InvokePath)
	add("the kubernetes Service", "https://"+c.kubernetesIP, cmPath)
	return attempts
}

// callOutcome is how a call with X-Callback-Url was answered.
type callOutcome struct {
	code int
	id   string
	data []byte
	err  error
}

// callWithCallbacks calls relay once per attempt, all at once.
func callWithCallbacks(inv *attacker, attempts []callbackAttempt) []callOutcome {
	outcomes := make([]callOutcome, len(attempts))
	var wg sync.WaitGroup
	for i, at := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outcomes[i]
			req, err := http.NewRequest(http.MethodPost, inv.base+"/api/funcs/relay?namespace=a", strings.NewReader(at.body))
			if err != nil {
				o.err = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+inv.token)
			req.Header.Set("X-Callback-Url", at.url)
			resp, err := inv.hc.Do(req)
			if err != nil {
				o.err = err
				return
			}
			defer resp.Body.Close()
			o.code = resp.StatusCode
			o.data, _ = io.ReadAll(resp.Body)
			var out struct {
				InstanceID string `json:"instanceId"`
			}
			_ = json.Unmarshal(o.data, &out)
			o.id = out.InstanceID
		}()
	}
	wg.Wait()
	return outcomes
}

// invokerCallbacks: the function-invoker calls relay with each of
// callbackAttempts: each call is 400 at once, or runs and its callback
// ends refused, never answered; nothing is made, and no receiver is
// reached (checked again at the end).
func (c *attackCluster) invokerCallbacks(t *testing.T) {
	inv := newAttacker(t, c.s, attackInvoker, "invoker-token")
	attempts := c.callbackAttempts()
	outcomes := callWithCallbacks(inv, attempts)
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	refusedAtCall, refusedAtDial := 0, 0
	for i, at := range attempts {
		o := outcomes[i]
		switch {
		case o.err != nil:
			t.Errorf("invoker: X-Callback-Url at %s (%s): %v", at.name, at.url, o.err)
		case o.code == http.StatusBadRequest && strings.Contains(string(o.data), "X-Callback-Url"):
			refusedAtCall++
		case o.code == http.StatusAccepted && o.id != "":
			st, err := waitCallback(ctx, c.s.Client, o.id, deadline)
			if err != nil {
				t.Errorf("invoker: X-Callback-Url at %s (%s): %v", at.name, at.url, err)
			} else if st.Delivered || st.StatusCode != 0 || !strings.HasPrefix(st.Error, "callback refused: ") {
				t.Errorf("invoker: X-Callback-Url at %s (%s): status.callback %+v, want refused, no answer", at.name, at.url, st)
			} else {
				refusedAtDial++
			}
		default:
			t.Errorf("invoker: X-Callback-Url at %s (%s): %d %s, want 400 naming X-Callback-Url or 202", at.name, at.url, o.code, o.data)
		}
	}
	t.Logf("%d callbacks: %d refused at the call (400), %d run and refused at the runner's dial", len(attempts), refusedAtCall, refusedAtDial)
	if refusedAtDial == 0 {
		t.Errorf("no callback got past the apiserver's check: the runner's guard was not tried")
	}
	for _, at := range attempts {
		kind, name, ok := strings.Cut(at.made, " ")
		if !ok {
			continue
		}
		var err error
		if kind == "configmap" {
			_, err = c.s.Client.ConfigMaps("b").Get(ctx, name)
		} else {
			_, err = c.s.Client.ClusterRoleBindings().Get(ctx, name)
		}
		if err == nil {
			t.Errorf("invoker: X-Callback-Url at %s (%s) made %s", at.name, at.url, at.made)
		}
	}
	for _, got := range c.recv.got() {
		t.Errorf("a receiver only a callback could reach got a connection: %s", got)
	}
}

// waitCallback waits until instance id of a has ended and its callback
// was judged.
func waitCallback(ctx context.Context, c *client.Client, id string, deadline time.Time) (*api.FuncCallbackStatus, error) {
	for {
		inst, err := c.FuncInstances("a").Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if cb := inst.Status.Callback; cb != nil && (cb.Delivered || cb.Error != "") {
			if inst.Status.Phase != api.InstanceSucceeded {
				return cb, fmt.Errorf("the call ended %s (%s): the callback was not tried", inst.Status.Phase, inst.Status.Error)
			}
			return cb, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("instance %s: no callback judged in time: %+v", id, inst.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// invokerRoutes: the function-invoker of a reaches nothing but calling
// a's functions and reading its own instances.
func (c *attackCluster) invokerRoutes(t *testing.T) {
	inv := newAttacker(t, c.s, attackInvoker, "invoker-token")
	forbidden := []int{http.StatusForbidden}
	const who = `User \"invoker\"`
	tmpl := `{"metadata":{"name":"pwn-tmpl","namespace":"a"},"spec":{"name":"pwn-tmpl","function":"ZGVmIHJ1bihhKTogcmV0dXJuIGE=","left":"RETURN","right":"RETURN"}}`
	cm := func(ns string) string { return `{"metadata":{"name":"pwn-inv-cm","namespace":"` + ns + `"}}` }
	admin := c.adminCall
	inv.try(t,
		attempt{name: "a ConfigMap of b", method: "POST", path: "/api/v1/namespaces/b/configmaps", body: cm("b"), want: forbidden, says: who},
		attempt{name: "a ConfigMap of a", method: "POST", path: "/api/v1/namespaces/a/configmaps", body: cm("a"), want: forbidden, says: who},
		attempt{name: "a ConfigMap of a as bytes", method: "POST", path: "/api/v1/namespaces/a/configmaps", body: cm("a"), ctype: "application/octet-stream",
			want: forbidden, says: who},
		attempt{name: "a's Secrets", method: "GET", path: "/api/v1/namespaces/a/secrets", want: forbidden, says: who},
		attempt{name: "b's Secret", method: "GET", path: "/api/v1/namespaces/b/secrets/db", want: forbidden, says: who},
		attempt{name: "a pod of a", method: "POST", path: "/api/v1/namespaces/a/pods", want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-inv-pod"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
		attempt{name: "a binding to cluster-admin", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", want: forbidden, says: who,
			body: mustJSON(binding("ClusterRoleBinding", "", "pwn-inv-crb", "ClusterRole", "cluster-admin", userSubject(attackInvoker)))},
		attempt{name: "a token of a's service account", method: "POST", path: "/api/v1/namespaces/a/serviceaccounts/prober/token", body: `{}`,
			want: forbidden, says: who},
		attempt{name: "node credentials", method: "POST", path: api.NodeCredentialsPath, body: `{"nodeName":"pwn-node"}`, want: forbidden, says: who},
		attempt{name: "a template", method: "POST", path: "/api/funcs/template", body: tmpl, want: forbidden, says: who},
		attempt{name: "a template through the Kubernetes route", method: "POST", path: "/apis/minik8s.io/v1/namespaces/a/funcs", body: tmpl,
			want: forbidden, says: who},
		attempt{name: "replacing relay", method: "PUT", path: "/api/funcs/template/relay?namespace=a", body: strings.ReplaceAll(tmpl, "pwn-tmpl", "relay"),
			want: forbidden, says: who},
		attempt{name: "deleting relay", method: "DELETE", path: "/api/funcs/template/relay?namespace=a", want: forbidden, says: who},
		attempt{name: "a trigger", method: "POST", path: "/apis/minik8s.io/v1/namespaces/a/triggers", want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-trigger"},"spec":{"function":"relay","schedule":{"cron":"* * * * *"}}}`},
		attempt{name: "calling b's function", method: "POST", path: "/api/funcs/secret?namespace=b", body: "x", ctype: "text/plain", want: forbidden, says: who},
		attempt{name: "calling relay in kube-system", method: "POST", path: "/api/funcs/relay?namespace=kube-system", body: "x", ctype: "text/plain",
			want: forbidden, says: who},
		attempt{name: "calling b's function naming a, then b", method: "POST", path: "/api/funcs/secret?namespace=a&namespace=b", body: "x",
			ctype: "text/plain", want: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound}},
		attempt{name: "calling b's function naming b, then a", method: "POST", path: "/api/funcs/secret?namespace=b&namespace=a", body: "x",
			ctype: "text/plain", want: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound}},
		attempt{name: "the apiserver's metrics", method: "GET", path: "/metrics", want: forbidden, says: who},
		attempt{name: "the admin's instance", method: "GET", path: "/api/funcs/" + admin + "?namespace=a", want: forbidden, says: "only the function instances it started"},
		attempt{name: "the admin's instance (Kubernetes route)", method: "GET", path: "/api/v1/namespaces/a/funcinstances/" + admin, want: forbidden,
			says: "only the function instances it started"},
		attempt{name: "stepping the admin's instance", method: "PUT", path: "/api/funcs/RETURN/" + admin + "?namespace=a", body: "forged", ctype: "text/plain",
			want: forbidden, says: "only the function instances it started"},
		attempt{name: "stepping its instance into b's function", method: "PUT", path: "/api/funcs/secret/" + c.ownCall(t, inv) + "?namespace=b", body: "x",
			ctype: "text/plain", want: forbidden, says: who},
		attempt{name: "stepping its instance into b's function by name", method: "PUT", path: "/api/funcs/b%2Fsecret/" + c.ownCall(t, inv) + "?namespace=a",
			body: "x", ctype: "text/plain", want: []int{http.StatusBadRequest, http.StatusNotFound}},
		attempt{name: "the admin's instance's status", method: "PUT", path: "/api/v1/namespaces/a/funcinstances/" + admin + "/status", want: forbidden, says: who,
			body: `{"metadata":{"name":"` + admin + `","namespace":"a"},"spec":{"function":"relay"},"status":{"phase":"Succeeded","result":"forged"}}`},
		attempt{name: "deleting the admin's instance", method: "DELETE", path: "/api/v1/namespaces/a/funcinstances/" + admin, want: forbidden, says: who},
		attempt{name: "an instance made directly", method: "POST", path: "/api/v1/namespaces/a/funcinstances", want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-inst"},"spec":{"function":"relay","user":"admin","callbackURL":"http://127.0.0.1:` + portOf(c.localOnNode1) + `/"}}`},
		attempt{name: "exec in relay's pod", method: "POST", path: "/api/v1/namespaces/a/pods/x/exec?command=id", want: forbidden, says: who},
		// A revision is called as its function is, and made by the
		// function controller alone.
		attempt{name: "calling a revision of b's function", method: "POST", path: "/api/funcs/secret@1?namespace=b", body: "x", ctype: "text/plain",
			want: forbidden, says: who},
		attempt{name: "a revision of relay", method: "POST", path: "/apis/minik8s.io/v1/namespaces/a/funcrevisions", want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-inv-rev"},"spec":{"function":"relay","revision":9,"template":{"function":"ZGVmIHJ1bihhKTogcmV0dXJuIGE="}}}`},
	)
	// The router's reading of a template route is the authorizer's:
	// however spelled, no template is made.
	for _, path := range []string{"/api/funcs//template", "/api/funcs/%2Ftemplate", "/api/funcs//template/", "/api/funcs/./template",
		"/api/funcs/template/../template", "/api/funcs/template%2F", "/api//funcs/template"} {
		inv.try(t, attempt{name: "a template at " + path, method: "POST", path: path + "?namespace=a", body: tmpl,
			want: []int{http.StatusForbidden, http.StatusNotFound}})
	}
	// Its lists show its own instances alone.
	code, data := inv.do(t, "GET", "/api/v1/namespaces/a/funcinstances", "", "", nil)
	if code != http.StatusOK || strings.Contains(string(data), admin) {
		t.Errorf("invoker: listing a's instances: %d, holds the admin's %s: %v", code, admin, strings.Contains(string(data), admin))
	}
	code, data = inv.do(t, "GET", "/api/funcs?namespace=a", "", "", nil)
	if strings.Contains(string(data), admin) {
		t.Errorf("invoker: GET /api/funcs?namespace=a (%d) shows the admin's instance %s", code, admin)
	}
}

// ownCall starts a call of relay as inv and returns its instance, which
// is inv's to step.
func (c *attackCluster) ownCall(t *testing.T, inv *attacker) string {
	t.Helper()
	code, data := inv.do(t, "POST", "/api/funcs/relay?namespace=a", "text/plain", "own", nil)
	var out struct {
		InstanceID string `json:"instanceId"`
	}
	if err := json.Unmarshal(data, &out); code != http.StatusAccepted || err != nil {
		t.Fatalf("invoker: calling relay: %d %s", code, data)
	}
	return out.InstanceID
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
