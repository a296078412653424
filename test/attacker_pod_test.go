package test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/test/containerdtest"
)

// podProbe is one attempt of a program in a pod: an HTTP request ("http",
// with the pod's service account token when Token; $API is the
// kubernetes Service as the pod's environment names it) or a TCP
// connection ("tcp").
type podProbe struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Addr   string `json:"addr,omitempty"`
	URL    string `json:"url,omitempty"`
	Method string `json:"method,omitempty"`
	Body   string `json:"body,omitempty"`
	Token  bool   `json:"token,omitempty"`
	// want is what it must get: an HTTP status ("403"), "refused" (no
	// connection) or "refused or 401/403" (no connection, the TLS
	// handshake refused, or an HTTP refusal).
	want string
}

// prober runs PROBES (a JSON list of podProbe) at once, each bounded, and
// prints one PROBE line of JSON per result. It first waits, bounded, for
// the API to answer through the kubernetes Service: the node's rules for
// it may come a moment after the pod starts.
const prober = `import json, os, socket, ssl, sys, threading, time, urllib.error, urllib.request
SA = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(SA + "/token").read().strip()
api = "https://%s:%s" % (os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
verified = ssl.create_default_context(cafile=SA + "/ca.crt")
blind = ssl.create_default_context()
blind.check_hostname = False
blind.verify_mode = ssl.CERT_NONE
def request(p):
    url = p["url"].replace("$API", api)
    body = p.get("body", "").encode() if p.get("method", "GET") != "GET" else None
    req = urllib.request.Request(url, data=body, method=p.get("method", "GET"))
    if p.get("token"):
        req.add_header("Authorization", "Bearer " + token)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=verified if url.startswith(api) else blind, timeout=15) as r:
            return {"status": r.status, "body": r.read(200).decode(errors="replace")}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read(200).decode(errors="replace")}
deadline = time.time() + 60
while True:
    try:
        request({"url": "$API/version"})
        break
    except Exception as e:
        if time.time() > deadline:
            print("API unreachable:", e, flush=True)
            break
        time.sleep(0.5)
out_lock = threading.Lock()
def probe(p):
    out = {"name": p["name"]}
    try:
        if p["kind"] == "tcp":
            host, port = p["addr"].rsplit(":", 1)
            socket.create_connection((host, int(port)), timeout=5).close()
            out["connected"] = True
        else:
            out.update(request(p))
    except Exception as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
    with out_lock:
        sys.stdout.write("PROBE " + json.dumps(out) + "\n")
        sys.stdout.flush()
threads = [threading.Thread(target=probe, args=(p,)) for p in json.loads(os.environ["PROBES"])]
for t in threads:
    t.start()
for t in threads:
    t.join()
`

// podProbes are the attempts of a pod of a running as service account
// prober (view in a).
func (c *attackCluster) podProbes() []podProbe {
	call := func(name, method, path, body string, want string) podProbe {
		return podProbe{Name: name, Kind: "http", URL: "$API" + path, Method: method, Body: body, Token: true, want: want}
	}
	tcp := func(name, addr string) podProbe {
		return podProbe{Name: name, Kind: "tcp", Addr: addr, want: "refused"}
	}
	out := []podProbe{
		// Controls: the token works, the pod network works.
		call("(control) a's ConfigMaps, which view reads", "GET", "/api/v1/namespaces/a/configmaps", "", "200"),
		{Name: "(control) pod b/sink's page", Kind: "http", URL: "http://" + c.sinkPod + ":8080/control", want: "200"},
		{Name: "a's ConfigMaps without the token", Kind: "http", URL: "$API/api/v1/namespaces/a/configmaps", want: "401"},
		call("a's Secrets", "GET", "/api/v1/namespaces/a/secrets", "", "403"),
		call("b's Secret", "GET", "/api/v1/namespaces/b/secrets/db", "", "403"),
		call("b's ConfigMaps", "GET", "/api/v1/namespaces/b/configmaps", "", "403"),
		call("every Secret", "GET", "/api/v1/secrets", "", "403"),
		call("the nodes", "GET", "/api/v1/nodes", "", "403"),
		call("a ConfigMap of a", "POST", "/api/v1/namespaces/a/configmaps", `{"metadata":{"name":"pwn-sa-cm"}}`, "403"),
		call("a pod on the host network", "POST", "/api/v1/namespaces/a/pods",
			`{"metadata":{"name":"pwn-sa-pod"},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"i"}]}}`, "403"),
		call("a binding to cluster-admin", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			mustJSON(binding("ClusterRoleBinding", "", "pwn-sa-crb", "ClusterRole", "cluster-admin", userSubject(attackProber))), "403"),
		call("a RoleBinding to edit", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings",
			mustJSON(binding("RoleBinding", "a", "pwn-sa-rb", "ClusterRole", "edit", userSubject(attackProber))), "403"),
		call("a token of a's default service account", "POST", "/api/v1/namespaces/a/serviceaccounts/default/token", `{}`, "403"),
		call("node credentials", "POST", api.NodeCredentialsPath, `{"nodeName":"pwn-sa-node"}`, "403"),
		call("calling relay", "POST", "/api/funcs/relay?namespace=a", "x", "403"),
		call("calling b's function", "POST", "/api/funcs/secret?namespace=b", "x", "403"),
		call("exec in b's pod", "POST", "/api/v1/namespaces/b/pods/sink/exec?command=id&stdout=true", "", "403"),
		call("exec in a pod of a", "POST", "/api/v1/namespaces/a/pods/probe-atk-1/exec?command=id&stdout=true", "", "403"),
		// Function pods serve the platform only, whatever the namespace.
		tcp("function secret of b at its Service", net.JoinHostPort(c.fnService["secret"], "80")),
		tcp("function secret of b at its pod", c.fnPod["secret"]),
		tcp("function relay of a at its Service", net.JoinHostPort(c.fnService["relay"], "80")),
		tcp("function relay of a at its pod", c.fnPod["relay"]),
		// What listens on node 1's loopback is not the pods'.
		tcp("the local port at node 1's address", net.JoinHostPort(c.nodes[0].IP, portOf(c.localOnNode1))),
		tcp("the local port at node 1's pod gateway", net.JoinHostPort(c.gateway["atk-1"], portOf(c.localOnNode1))),
		tcp("the local port at the pod's loopback", net.JoinHostPort("127.0.0.1", portOf(c.localOnNode1))),
		tcp("etcd at node 1's address", net.JoinHostPort(c.nodes[0].IP, portOf(c.etcdOnNode1))),
		tcp("etcd at node 1's pod gateway", net.JoinHostPort(c.gateway["atk-1"], portOf(c.etcdOnNode1))),
		tcp("etcd at the apiserver's address", net.JoinHostPort(c.cp.IP, portOf(c.etcd))),
		{Name: "the runner's calls", Kind: "http", Method: "POST", Body: "x", want: "refused or 401/403",
			URL: "https://" + c.runner.Address + function.RunnerCallPath + "/b/secret?id=pwn&wait=1s"},
		{Name: "the runner's calls with the token", Kind: "http", Method: "POST", Body: "x", Token: true, want: "refused or 401/403",
			URL: "https://" + c.runner.Address + function.RunnerCallPath + "/b/secret?id=pwn&wait=1s"},
	}
	for node, addr := range c.kubeletAddr {
		for _, withToken := range []bool{false, true} {
			how := map[bool]string{false: "", true: " with the token"}[withToken]
			out = append(out,
				podProbe{Name: node + "'s kubelet's pods" + how, Kind: "http", URL: "https://" + addr + "/pods", Token: withToken, want: "refused or 401/403"},
				podProbe{Name: node + "'s kubelet's exec" + how, Kind: "http", Method: "POST", URL: "https://" + addr + "/exec/b/sink/sink?command=id&output=1",
					Token: withToken, want: "refused or 401/403"})
		}
	}
	return out
}

// startProbes has the edit user run the prober in a pod on each node, as
// service account prober; they run while the others attack.
func (c *attackCluster) startProbes(t *testing.T) {
	c.probeRun = c.podProbes()
	probes := mustJSON(c.probeRun)
	ed := newAttacker(t, c.s, attackEditor, "editor-token")
	for _, k := range c.kubelets {
		p := &api.Pod{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: api.ObjectMeta{Name: "probe-" + k.Name, Namespace: "a"},
			Spec: api.PodSpec{NodeName: k.Name, ServiceAccountName: "prober", RestartPolicy: api.RestartPolicyNever,
				Containers: []api.Container{{Name: "probe", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", prober},
					Env: []api.EnvVar{{Name: "PROBES", Value: probes}}}}}}
		if code, data := ed.do(t, "POST", api.PodsResource.Path("a", ""), "", mustJSON(p), nil); code != http.StatusCreated {
			t.Fatalf("the edit user's pod %s: %d %s", p.Name, code, data)
		}
	}
}

// podAttacks: what the programs in the pods tried failed.
func (c *attackCluster) podAttacks(t *testing.T) {
	ctx := context.Background()
	for _, k := range c.kubelets {
		name := "probe-" + k.Name
		var p *api.Pod
		waitUntil(t, 3*time.Minute, "pod "+name+" ended", func() bool {
			var err error
			p, err = c.s.Client.Pods("a").Get(ctx, name)
			return err == nil && (p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed)
		})
		log := podLog(k, p)
		results := map[string]map[string]any{}
		for _, line := range strings.Split(log, "\n") {
			_, js, ok := strings.Cut(line, "PROBE ")
			if !ok {
				continue
			}
			var r map[string]any
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				t.Fatalf("pod %s: %q: %v", name, line, err)
			}
			results[r["name"].(string)] = r
		}
		if p.Status.Phase != api.PodSucceeded || len(results) == 0 {
			t.Fatalf("pod %s: %s\n%s", name, statusString(p), log)
		}
		t.Logf("pod %s:\n%s", name, log) // shown with -v
		for _, probe := range c.probeRun {
			r, ok := results[probe.Name]
			if !ok {
				t.Errorf("pod %s: no result for %q\n%s", name, probe.Name, log)
				continue
			}
			status, _ := r["status"].(float64)
			_, connected := r["connected"]
			_, failed := r["error"]
			var good bool
			switch probe.want {
			case "refused":
				good = failed && !connected
			case "refused or 401/403":
				good = failed || status == http.StatusUnauthorized || status == http.StatusForbidden
			default:
				good = probe.want == strconv.Itoa(int(status))
			}
			if !good {
				t.Errorf("pod %s as %s: %s: %v, want %s", name, attackProber, probe.Name, r, probe.want)
			}
		}
	}
}
