package test

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/apiserver"
	"minik8s/kubelet"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// nodeAttack is node atk-2's credentials in an attacker's hands: the
// kubelet's kubeconfig, its node password and the node token.
type nodeAttack struct {
	c           *attackCluster
	name, other string
	node        *framework.NetNode
	cfg         client.Config
	own         *client.Client // its certificate
	token       *client.Client // the node token
	password    string
	as          *attacker
}

func (c *attackCluster) nodeAttacker(t *testing.T) *nodeAttack {
	k := c.kubelets[1]
	cfg, err := client.LoadKubeconfig(k.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	// It reached the apiserver at its advertised address; the test, on
	// the machine, at its secure port.
	cfg.Server = c.s.SecureURL
	own, err := client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := os.ReadFile(filepath.Join(k.RootDir, kubelet.NodePasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	token, err := os.ReadFile(filepath.Join(c.s.DataDir, apiserver.NodeTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return &nodeAttack{c: c, name: k.Name, other: c.kubelets[0].Name, node: k.Node, cfg: cfg, own: own,
		token:    c.s.SecureClient(t, client.Config{Token: strings.TrimSpace(string(token))}),
		password: strings.TrimSpace(string(pw)),
		as:       &attacker{who: "node " + k.Name, base: c.s.SecureURL, hc: rawClient(t, c.s, cfg)}}
}

// credentials: the node token and the node's certificate mint nothing for
// another name, and no serving certificate for an address that is not
// the node's.
func (n *nodeAttack) credentials(t *testing.T) {
	ctx := context.Background()
	other := strings.Repeat("p", 64)
	for _, tc := range []struct {
		what       string
		with       *client.Client
		name, pass string
		ip         string
		forbidden  bool // else invalid
		says       string
	}{
		{"the token for the other node", n.token, n.other, other, n.c.nodes[0].IP, true, "node password"},
		{"the token for its own name without its password", n.token, n.name, other, n.node.IP, true, "node password"},
		{"the token for a Node that never joined", n.token, "atk-cp", other, "10.99.0.50", true, "did not join with the node token"},
		{"its certificate for the other node", n.own, n.other, n.password, n.c.nodes[0].IP, true, "may renew only its own"},
		{"a serving certificate for 127.0.0.1", n.own, n.name, n.password, "127.0.0.1", true, "loopback"},
		{"a serving certificate for the apiserver's address", n.own, n.name, n.password, n.c.cp.IP, true, "apiserver's address"},
		{"a serving certificate for the other node's address", n.own, n.name, n.password, n.c.nodes[0].IP, true, "holds that address"},
		{"a serving certificate for the metadata address", n.own, n.name, n.password, "169.254.169.254", true, "link-local"},
		{"the token for a new name at 127.0.0.1", n.token, "pwn-node", other, "127.0.0.1", true, "loopback"},
		{"the token for a new name at the apiserver's address", n.token, "pwn-node", other, n.c.cp.IP, true, "apiserver's address"},
		{"the token for a new name at the other node's address", n.token, "pwn-node", other, n.c.nodes[0].IP, true, "holds that address"},
		{"the token for system:node:" + n.other, n.token, "system:node:" + n.other, other, "10.99.0.51", false, "nodeName"},
		{"the token for a name with a path", n.token, n.other + "/../x", other, "10.99.0.52", false, "nodeName"},
		{"the token for no name", n.token, "", other, "10.99.0.53", false, "nodeName"},
	} {
		_, err := askNodeCredentials(ctx, tc.with, tc.name, tc.pass, tc.ip)
		ok := errdefs.IsInvalid(err)
		if tc.forbidden {
			ok = errdefs.IsForbidden(err)
		}
		if !ok || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("node %s: %s: %v, want %s saying %q", n.name, tc.what, err, map[bool]string{true: "403", false: "422"}[tc.forbidden], tc.says)
		}
	}
}

// reads: the node reads only the Secrets and ConfigMaps of pods bound to
// it, by get or a list or watch of that one name.
func (n *nodeAttack) reads(t *testing.T) {
	ctx := context.Background()
	forbidden := []int{http.StatusForbidden}
	var attempts []attempt
	for _, res := range []string{"secrets", "configmaps"} {
		name := map[string]string{"secrets": "db", "configmaps": "settings"}[res]
		for _, path := range []string{
			"/api/v1/namespaces/b/" + res + "/" + name,
			"/api/v1/namespaces/b/" + res,
			"/api/v1/namespaces/a/" + res,
			"/api/v1/" + res,
			"/api/v1/namespaces/b/" + res + "?watch=true",
			"/api/v1/" + res + "?watch=true",
			"/api/v1/namespaces/b/" + res + "?fieldSelector=metadata.name%3D" + name,
			"/api/v1/namespaces/b/" + res + "?watch=true&fieldSelector=metadata.name%3D" + name,
		} {
			attempts = append(attempts, attempt{name: "reading " + path, method: "GET", path: path, want: forbidden})
		}
	}
	// A function's code: its node's to read while a pod of it runs
	// there, no other node's.
	for _, fn := range []struct{ ns, name string }{{"a", "relay"}, {"b", "secret"}} {
		pods, _, err := n.c.s.Client.Pods(fn.ns).List(ctx, client.ListOptions{LabelSelector: function.LabelFunc + "=" + fn.name})
		if err != nil {
			t.Fatal(err)
		}
		want, where := http.StatusForbidden, "no pod of it is bound to "+n.name
		for _, p := range pods {
			if p.Spec.NodeName == n.name {
				want, where = http.StatusOK, "its pod "+p.Name+" is bound to "+n.name
			}
		}
		attempts = append(attempts, attempt{name: "reading function " + fn.name + "'s code (" + where + ")", method: "GET",
			path: api.ConfigMapsResource.Path(fn.ns, function.ObjectName(fn.name)), want: []int{want}})
	}
	n.as.try(t, attempts...)
}

// writes: the node writes no other node's Node or pods, makes no pod and
// no token for a pod not bound to it, and labels itself nothing that
// steers workloads.
func (n *nodeAttack) writes(t *testing.T) {
	ctx := context.Background()
	forbidden := []int{http.StatusForbidden}
	probe, err := n.c.s.Client.Pods("a").Get(ctx, "probe-"+n.other)
	if err != nil {
		t.Fatal(err)
	}
	otherNode := n.c.stored(t, api.NodesResource.Path("", n.other))
	podOf := func(node string) string {
		return `{"metadata":{"name":"pwn-node-pod","namespace":"a"},"spec":{"nodeName":"` + node + `","containers":[{"name":"c","image":"i"}]}}`
	}
	// An admin's taint keeps pods off the node: not the node's to lift.
	taint := func(taints []corev1.Taint) {
		t.Helper()
		for {
			node, err := n.c.s.Client.Nodes().Get(ctx, n.name)
			if err != nil {
				t.Fatal(err)
			}
			node.Spec.Taints = taints
			_, err = n.c.s.Client.Nodes().Update(ctx, node)
			if err == nil {
				return
			}
			// The node's kubelet writes it too (its status): read again.
			if !errdefs.IsConflict(err) {
				t.Fatal(err)
			}
		}
	}
	taint([]corev1.Taint{{Key: "dedicated", Value: "secure", Effect: corev1.TaintEffectNoSchedule}})
	defer taint(nil)
	n.as.try(t,
		attempt{name: "lifting an admin's taint off itself", method: "PATCH", path: api.NodesResource.Path("", n.name), ctype: "application/merge-patch+json",
			body: `{"spec":{"taints":null}}`, want: forbidden, says: "not allowed to modify taints"},
		attempt{name: "labelling the other node", method: "PATCH", path: api.NodesResource.Path("", n.other), ctype: "application/merge-patch+json",
			body: `{"metadata":{"labels":{"pwn":"yes"}}}`, want: forbidden, says: "its own Node"},
		attempt{name: "the other node's status", method: "PUT", path: api.NodesResource.Path("", n.other) + "/status", body: mustJSON(otherNode),
			want: forbidden, says: "its own Node"},
		attempt{name: "deleting the other node", method: "DELETE", path: api.NodesResource.Path("", n.other), want: forbidden},
		attempt{name: "labelling itself to steer workloads", method: "PATCH", path: api.NodesResource.Path("", n.name), ctype: "application/merge-patch+json",
			body: `{"metadata":{"labels":{"node-restriction.kubernetes.io/pwn":"yes"}}}`, want: forbidden, says: "node-restriction.kubernetes.io/pwn"},
		attempt{name: "the status of a pod on the other node", method: "PUT", path: api.PodsResource.Path("a", probe.Name) + "/status",
			body: mustJSON(probe), want: forbidden, says: `bound to \"` + n.other + `\"`},
		attempt{name: "deleting a pod on the other node", method: "DELETE", path: api.PodsResource.Path("a", probe.Name), want: forbidden},
		attempt{name: "a pod on itself", method: "POST", path: api.PodsResource.Path("a", ""), body: podOf(n.name), want: forbidden},
		attempt{name: "a pod on the other node", method: "POST", path: api.PodsResource.Path("a", ""), body: podOf(n.other), want: forbidden},
		attempt{name: "a token for a pod on the other node", method: "POST", path: "/api/v1/namespaces/a/serviceaccounts/prober/token", want: forbidden,
			body: mustJSON(map[string]any{"spec": map[string]any{"boundObjectRef": map[string]string{"kind": "Pod", "apiVersion": "v1", "name": probe.Name, "uid": probe.UID}}})},
		attempt{name: "a token of its own pod for an audience the pod did not ask", method: "POST", path: "/api/v1/namespaces/a/serviceaccounts/prober/token",
			want: forbidden, says: `audience \"vault\" not found in pod spec volume`,
			body: mustJSON(map[string]any{"spec": map[string]any{"audiences": []string{"vault"},
				"boundObjectRef": map[string]string{"kind": "Pod", "apiVersion": "v1", "name": "probe-" + n.name}}})},
		attempt{name: "a token bound to no pod", method: "POST", path: "/api/v1/namespaces/b/serviceaccounts/default/token", body: `{}`, want: forbidden},
	)
	if p, err := n.c.s.Client.Pods("a").Get(ctx, probe.Name); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("node %s: pod %s after its attempts: %v %v", n.name, probe.Name, p, err)
	}
	if node, err := n.c.s.Client.Nodes().Get(ctx, n.other); err != nil || node.Labels["pwn"] != "" {
		t.Errorf("node %s: node %s after its attempts: %v %v", n.name, n.other, node, err)
	}
}

// adminRoutes: the node is no admin.
func (n *nodeAttack) adminRoutes(t *testing.T) {
	forbidden := []int{http.StatusForbidden}
	n.as.try(t,
		attempt{name: "a binding to cluster-admin", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", want: forbidden,
			body: mustJSON(binding("ClusterRoleBinding", "", "pwn-node-crb", "ClusterRole", "cluster-admin", userSubject("system:node:"+n.name)))},
		attempt{name: "widening system:node", method: "PATCH", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:node", ctype: "application/merge-patch+json",
			body: `{"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}`, want: forbidden},
		attempt{name: "a namespace", method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"pwn-node-ns"}}`, want: forbidden},
		attempt{name: "deleting namespace b", method: "DELETE", path: "/api/v1/namespaces/b", want: forbidden},
		attempt{name: "a ConfigMap of b", method: "POST", path: "/api/v1/namespaces/b/configmaps", body: `{"metadata":{"name":"pwn-node-cm"}}`, want: forbidden},
		// A node enforces the policies, and writes none.
		attempt{name: "a NetworkPolicy of b", method: "POST", path: api.NetworkPoliciesResource.Path("b", ""), want: forbidden,
			body: `{"metadata":{"name":"pwn-node-np"},"spec":{"podSelector":{},"ingress":[{}]}}`},
		attempt{name: "a template", method: "POST", path: "/api/funcs/template", want: forbidden,
			body: `{"metadata":{"name":"pwn-node-fn","namespace":"b"},"spec":{"name":"pwn-node-fn","function":"ZGVmIHJ1bihhKTogcmV0dXJuIGE=","left":"RETURN","right":"RETURN"}}`},
		attempt{name: "calling b's function", method: "POST", path: "/api/funcs/secret?namespace=b", body: "x", ctype: "text/plain", want: forbidden},
		attempt{name: "exec in b's pod", method: "POST", path: "/api/v1/namespaces/b/pods/sink/exec?command=id&stdout=true", want: forbidden},
		attempt{name: "the runners' leases", method: "GET", path: api.LeasesResource.Path(function.RunnerNamespace, ""), want: forbidden},
		attempt{name: "a runner's Lease", method: "POST", path: api.LeasesResource.Path(function.RunnerNamespace, ""), want: forbidden,
			body: `{"metadata":{"name":"pwn-node-runner","annotations":{"` + function.AnnotationRunnerURL + `":"http://` + n.node.IP + `:1"}},"spec":{"holderIdentity":"pwn"}}`},
	)
}

// network: etcd refuses the node's certificate at the handshake; the
// kubelets and the runner, reached from the node, answer only the
// apiserver.
func (n *nodeAttack) network(t *testing.T) {
	if err := tlsHandshakeServed(n.c.etcd, n.cfg.CertData, n.cfg.KeyData); err == nil || !strings.Contains(err.Error(), "remote error: tls") {
		t.Errorf("node %s: etcd's client port with its certificate: %v, want the handshake refused", n.name, err)
	}
	pair, err := tls.X509KeyPair(n.cfg.CertData, n.cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: n.node.DialContext, Proxy: nil,
		// The servers' names are not what is tried here.
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true}} //nolint:gosec
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	targets := map[string]string{"the runner's calls": "https://" + n.c.runner.Address + function.RunnerCallPath + "/b/secret?id=pwn&wait=1s"}
	for node, addr := range n.c.kubeletAddr {
		targets[node+"'s kubelet's pods"] = "https://" + addr + "/pods"
		targets[node+"'s kubelet's exec"] = "https://" + addr + "/exec/b/sink/sink?command=id&output=1"
	}
	for what, url := range targets {
		resp, err := hc.Post(url, "text/plain", strings.NewReader("pwn"))
		if err != nil {
			t.Errorf("node %s: %s (%s): %v, want 403", n.name, what, url, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("node %s: %s (%s): %s, want 403", n.name, what, url, resp.Status)
		}
	}
}
