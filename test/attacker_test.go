package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/pkg/rbac"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// Issue 25's integrating check: four attackers try every route they
// should not reach on one cluster with the default data path, and every
// attempt fails. The cluster: a secure apiserver advertised on the
// underlay at its control plane's address (framework.ControlPlane), the
// controller manager with its own identity, the scheduler, two kubelets in
// node namespaces that joined with the node token, pods on their own
// network, and a function runner on node 1 with its own certificate and
// bin/funcrunner's defaults. Node 1 plays the machine minik8s up runs on:
// the apiserver's local port, its secure port and etcd's client port are
// on its loopback, beside the runner. Namespace a is the attackers'
// (function relay, which returns its argument); b is the victim's
// (function secret, Secret db, ConfigMap settings, pod sink behind
// Service sink). Whatever an attacker tries to create is named pwn-…;
// what it may create (its controls) ctl-….

// The attackers with static tokens: a function-invoker of a and an edit
// user of a.
const attackTokens = `invoker-token,invoker,u1
editor-token,editor,u2
`

const (
	attackInvoker = "invoker"
	attackEditor  = "editor"
	// attackProber is the service account of the attacking pods, bound
	// to view in a.
	attackProber = "system:serviceaccount:a:prober"
)

// attackCluster is the cluster the attackers share, and what they know of
// it.
type attackCluster struct {
	s        *framework.APIServer
	nodes    []*framework.NetNode // atk-1, atk-2
	kubelets []*framework.NetKubelet
	runner   *framework.NetFuncRunner
	cp       *framework.NetNode
	// server is the secure port as the nodes and pods reach it.
	server string
	// etcd is etcd's client address on the machine.
	etcd string
	// onNode1 are the local port, the secure port and etcd's client port
	// forwarded onto node 1's loopback (127.0.0.1:PORT there).
	localOnNode1, secureOnNode1, etcdOnNode1 string
	// kubeletAddr is each node's kubelet (NODE-IP:PORT), gateway its
	// pods' gateway.
	kubeletAddr, gateway map[string]string
	// fn are the functions' Service IPs and pods (IP:PORT), by name.
	fnService, fnPod                   map[string]string
	sinkPod, sinkService, kubernetesIP string
	// adminCall is an instance of relay the admin started.
	adminCall string
	recv      *receivers
	pods      *privilegedPods
	probeRun  []podProbe
}

// TestAttacker: a function-invoker, an edit user of one namespace, a
// node's credentials and a pod's service account each try every route
// they should not reach, and every attempt fails with the status
// Kubernetes gives (or the connection refused); then nothing they tried
// to make exists, the audit log holds no write of theirs that succeeded
// but their own, no privileged pod ever appeared, and no receiver behind a
// refused callback got a connection.
func TestAttacker(t *testing.T) {
	c := startAttackCluster(t)
	t.Run("attackers", func(t *testing.T) {
		t.Run("function-invoker", func(t *testing.T) {
			t.Parallel()
			t.Run("callbacks", c.invokerCallbacks)
			t.Run("routes", c.invokerRoutes)
		})
		t.Run("edit user of a", func(t *testing.T) {
			t.Parallel()
			t.Run("privileged pod templates", c.editorTemplates)
			t.Run("namespace b", c.editorNamespaceB)
			t.Run("bindings and endpoints", c.editorBindings)
			t.Run("statefulsets", c.editorStatefulSets)
		})
		t.Run("node credentials", func(t *testing.T) {
			t.Parallel()
			n := c.nodeAttacker(t)
			t.Run("credentials", n.credentials)
			t.Run("secrets and configmaps", n.reads)
			t.Run("other node and pods", n.writes)
			t.Run("cluster-admin routes", n.adminRoutes)
			t.Run("etcd, kubelets and runner", n.network)
		})
		t.Run("pod service account", func(t *testing.T) {
			t.Parallel()
			c.podAttacks(t)
		})
	})
	t.Run("nothing landed", c.nothingLanded)
}

// startAttackCluster starts the cluster, makes a's and b's objects, and
// starts the attacking pods (which run while the others attack).
func startAttackCluster(t *testing.T) *attackCluster {
	ctx := context.Background()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportFunctionRuntime(t)
	u := framework.StartUnderlay(t, 2)
	c := &attackCluster{nodes: u.Nodes, cp: u.ControlPlane(t), kubeletAddr: map[string]string{}, gateway: map[string]string{},
		fnService: map[string]string{}, fnPod: map[string]string{}}
	c.s = u.StartSecureAPIServerWith(t, c.cp, attackTokens, nil)
	s := c.s
	c.server = framework.AdvertisedURL(s, c.cp)
	// Before any relay listens beside it on the machine's loopback.
	c.etcd = etcdClientPort(t, s, filepath.Join(s.DataDir, "pki"), "/registry/namespaces/default")
	c.pods = watchPrivilegedPods(t, s.Client)

	cm, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, rbac.ControllerManagerUser)
	if err != nil {
		t.Fatal(err)
	}
	cmClient, err := client.NewForConfig(cm)
	if err != nil {
		t.Fatal(err)
	}
	framework.StartControllers(t, s, controller.Config{Client: cmClient})
	framework.StartScheduler(t, s, scheduler.Config{})
	for i, node := range u.Nodes {
		name := fmt.Sprintf("atk-%d", i+1)
		c.kubelets = append(c.kubelets, framework.StartJoinedNetKubelet(t, node, s, ctd, name, c.server))
	}
	c.runner = framework.StartSecureNetFuncRunner(t, u.Nodes[0], s, c.server)
	n1 := u.Nodes[0]
	c.localOnNode1 = n1.Forward(t, s.Addr)
	c.secureOnNode1 = n1.Forward(t, strings.TrimPrefix(s.SecureURL, "https://"))
	c.etcdOnNode1 = n1.Forward(t, c.etcd)
	for _, k := range c.kubelets {
		node, err := s.Client.Nodes().Get(ctx, k.Name)
		if err != nil {
			t.Fatal(err)
		}
		c.kubeletAddr[k.Name] = net.JoinHostPort(k.Node.IP, strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)))
		_, cidr, err := net.ParseCIDR(node.Spec.PodCIDR)
		if err != nil {
			t.Fatalf("node %s's pod CIDR %q: %v", k.Name, node.Spec.PodCIDR, err)
		}
		gw := cidr.IP.To4()
		c.gateway[k.Name] = net.IPv4(gw[0], gw[1], gw[2], gw[3]+1).String()
	}

	c.makeObjects(t)
	// The bindings have reached the authorizer.
	waitAllowed(t, newCaller(t, s, "editor-token"), "GET", "/api/v1/namespaces/a/pods")
	waitAllowed(t, newCaller(t, s, "invoker-token"), "GET", "/api/funcs/template?namespace=a")
	c.recv = startReceivers(t, c)
	c.startProbes(t)
	return c
}

// makeObjects makes the namespaces, the attackers' bindings and a's and
// b's objects as the admin, and waits for the functions' pods and sink.
func (c *attackCluster) makeObjects(t *testing.T) {
	ctx := context.Background()
	admin := c.s.Client
	for _, ns := range []string{"a", "b"} {
		if _, err := admin.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.ServiceAccounts("a").Create(ctx, &api.ServiceAccount{ObjectMeta: api.ObjectMeta{Name: "prober"}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ name, role string }{{attackEditor, rbac.Edit}, {attackInvoker, rbac.FunctionInvoker}} {
		rbacObject(t, c.s, "/namespaces/a/rolebindings", binding("RoleBinding", "a", b.name, "ClusterRole", b.role, userSubject(b.name)))
	}
	rbacObject(t, c.s, "/namespaces/a/rolebindings", binding("RoleBinding", "a", "prober", "ClusterRole", rbac.View,
		api.Subject{Kind: api.ServiceAccountKind, Name: "prober", Namespace: "a"}))
	// A Node that never joined with the token, as minik8s up's own.
	if _, err := admin.Nodes().Create(ctx, &api.Node{ObjectMeta: api.ObjectMeta{Name: "atk-cp"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Secrets("b").Create(ctx, &api.Secret{ObjectMeta: api.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ConfigMaps("b").Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "debug"}}); err != nil {
		t.Fatal(err)
	}
	sink := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "sink", Labels: map[string]string{"app": "sink"}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "sink", Image: containerdtest.PythonRuntimeImage,
			Command: []string{"python3", "-c", sinkServer}, Ports: []api.ContainerPort{{ContainerPort: 8080}}}}}}
	if _, err := admin.Pods("b").Create(ctx, sink); err != nil {
		t.Fatal(err)
	}
	svc, err := admin.Services("b").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "sink"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "sink"}, Ports: []api.ServicePort{{Port: 80, TargetPort: "8080"}}}})
	if err != nil {
		t.Fatal(err)
	}
	c.sinkService = svc.Spec.ClusterIP
	kube, err := admin.Services("default").Get(ctx, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	c.kubernetesIP = kube.Spec.ClusterIP
	one := map[string]any{"initInstanceNum": 1, "minInstanceNum": 1, "maxInstanceNum": 1}
	c.funcTemplate(t, "a", "relay", "def run(arg):\n    return arg\n", one)
	c.funcTemplate(t, "b", "secret", "def run(arg):\n    return 'secret of b'\n", one)
	c.waitServing(t)
	// An instance of the admin's, which the invoker may not touch.
	code, data := httpDo(t, "POST", c.s.URL+"/api/funcs/relay?namespace=a&wait=60s", "text/plain", []byte("the admin's"))
	var v api.FuncInstanceView
	if err := json.Unmarshal(data, &v); code != http.StatusOK || err != nil || v.InstanceID == "" {
		t.Fatalf("the admin calling relay: %d %s", code, data)
	}
	c.adminCall = v.InstanceID
}

// waitServing waits for the functions' pods in their Services' endpoints
// and for pod b/sink, and notes their addresses.
func (c *attackCluster) waitServing(t *testing.T) {
	ctx := context.Background()
	admin := c.s.Client
	for _, fn := range []struct{ ns, name string }{{"a", "relay"}, {"b", "secret"}} {
		waitUntil(t, 3*time.Minute, "function "+fn.name+"'s pod ready in its Service's endpoints", func() bool {
			ep, err := admin.Endpoints(fn.ns).Get(ctx, function.ObjectName(fn.name))
			if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || len(ep.Subsets[0].Ports) == 0 {
				return false
			}
			a := ep.Subsets[0].Addresses[0]
			port := a.Port
			if port == 0 {
				port = ep.Subsets[0].Ports[0].Port
			}
			c.fnPod[fn.name] = net.JoinHostPort(a.IP, strconv.Itoa(int(port)))
			return true
		})
		svc, err := admin.Services(fn.ns).Get(ctx, function.ObjectName(fn.name))
		if err != nil {
			t.Fatal(err)
		}
		c.fnService[fn.name] = svc.Spec.ClusterIP
	}
	waitUntil(t, 2*time.Minute, "pod b/sink running", func() bool {
		p, err := admin.Pods("b").Get(ctx, "sink")
		if err == nil && p.Status.Phase == api.PodRunning && p.Status.PodIP != "" {
			c.sinkPod = p.Status.PodIP
			return true
		}
		return false
	})
}

// funcTemplate posts a template of ns as the admin.
func (c *attackCluster) funcTemplate(t *testing.T, ns, name, code string, extra map[string]any) {
	t.Helper()
	spec := map[string]any{"name": name, "function": base64.StdEncoding.EncodeToString([]byte(code)), "left": "RETURN", "right": "RETURN"}
	for k, v := range extra {
		spec[k] = v
	}
	body := mustJSON(map[string]any{"apiVersion": "v2", "kind": "Func", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
	if code, data := httpDo(t, "POST", c.s.URL+"/api/funcs/template", "application/json", []byte(body)); code != http.StatusCreated {
		t.Fatalf("func %s/%s: %d %s", ns, name, code, data)
	}
}

// sinkServer answers every request and prints it: a victim's pod, and a
// receiver no callback may reach.
const sinkServer = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        print("REQUEST", self.command, self.path, "from", self.client_address[0], flush=True)
        self.send_response(200); self.end_headers(); self.wfile.write(b"sink")
    do_GET = do_POST = do_PUT = answer
http.server.HTTPServer(("0.0.0.0", 8080), H).serve_forever()
`

// attacker sends requests as one identity: a bearer token, or the client
// certificate its HTTP client carries.
type attacker struct {
	who   string
	base  string
	token string
	hc    *http.Client
}

// attempt is one thing an attacker tries, and what it must get.
type attempt struct {
	name               string // what is tried, as the failure names it
	method, path, body string
	ctype              string // application/json when there is a body and none is given
	want               []int  // the statuses Kubernetes gives
	says               string // what the answer must say, when set
	header             http.Header
}

func newAttacker(t *testing.T, s *framework.APIServer, who, token string) *attacker {
	t.Helper()
	c := newCaller(t, s, token)
	return &attacker{who: who, base: s.SecureURL, token: token, hc: c.hc}
}

func (a *attacker) do(t *testing.T, method, path, ctype, body string, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if ctype == "" && body != "" {
		ctype = "application/json"
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", a.who, method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, data
}

// try makes each attempt and checks it failed as it must.
func (a *attacker) try(t *testing.T, attempts ...attempt) {
	t.Helper()
	for _, at := range attempts {
		code, data := a.do(t, at.method, at.path, at.ctype, at.body, at.header)
		if !slices.Contains(at.want, code) || !bytes.Contains(data, []byte(at.says)) {
			t.Errorf("%s: %s (%s %s): %d %s, want %v saying %q", a.who, at.name, at.method, at.path, code,
				bytes.TrimSpace(data[:min(len(data), 400)]), at.want, at.says)
		}
	}
}
