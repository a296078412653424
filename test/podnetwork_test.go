package test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// fixedPortServer listens on the fixed port 8080 of its pod, as ordinary
// images do, and says which pod it is.
const fixedPortServer = `import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from " + os.environ["POD_NAME"]).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", 8080), H).serve_forever()
`

// sidecar serves on port 9090 what its pod's other container serves on
// localhost:8080.
const sidecar = `import http.server, urllib.request
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = urllib.request.urlopen("http://localhost:8080/", timeout=5).read()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", 9090), H).serve_forever()
`

func webPod(name, node string) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.PodSpec{NodeName: node, Containers: []api.Container{{
			Name: "web", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", fixedPortServer},
			Ports: []api.ContainerPort{{ContainerPort: 8080}},
			Env:   []api.EnvVar{{Name: "POD_NAME", Value: name}},
		}}}}
}

// TestPodsGetTheirOwnNetwork: a kubelet in a simulated node's namespace,
// with --pod-network cni, runs two pods of an image listening on the same
// fixed port, each with its own address of the node's pod CIDR (one ready
// by a TCP probe, kept alive by an exec probe); the node reaches both, and a second container of one relays its first's page
// over localhost; deleting them, and restarting the kubelet after a pod was
// deleted while it was down, leaves no namespace, veth or address behind.
func TestPodsGetTheirOwnNetwork(t *testing.T) {
	ctx := context.Background()
	u := framework.StartUnderlay(t, 1)
	s := u.StartAPIServer(t, nil)
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	node := u.Nodes[0]
	k := framework.StartNetKubelet(t, node, s, ctd, "podnet-1")
	c := s.Client

	var podCIDR *net.IPNet
	waitUntil(t, 60*time.Second, "the node registered with its pod CIDR", func() bool {
		n, err := c.Nodes().Get(ctx, "podnet-1")
		if err != nil || n.Spec.PodCIDR == "" {
			return false
		}
		_, podCIDR, err = net.ParseCIDR(n.Spec.PodCIDR)
		return err == nil
	})
	// web-1's second container relays its first's page over localhost.
	for _, name := range []string{"web-1", "web-2"} {
		p := webPod(name, "podnet-1")
		if name == "web-1" {
			p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "side", Image: containerdtest.PythonRuntimeImage,
				Command: []string{"python3", "-c", sidecar}, Ports: []api.ContainerPort{{ContainerPort: 9090}}})
		} else {
			// Probes reach the pod at its address, or run in the container.
			c := &p.Spec.Containers[0]
			c.ReadinessProbe = &api.Probe{TCPSocket: &api.TCPSocketAction{Port: "8080"}, PeriodSeconds: 1}
			c.LivenessProbe = &api.Probe{Exec: &api.ExecAction{Command: []string{"python3", "-c",
				`import urllib.request; urllib.request.urlopen("http://localhost:8080/", timeout=2)`}}, PeriodSeconds: 1, TimeoutSeconds: 5}
		}
		if _, err := c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ips := map[string]string{}
	for _, name := range []string{"web-1", "web-2"} {
		p := waitPod(t, c, name, 2*time.Minute, "ready with its own address", func(p *api.Pod) bool {
			return p.Status.Phase == api.PodRunning && p.Status.PodIP != "" && p.Status.PodIP != node.IP && podReady(p)
		})
		ip := net.ParseIP(p.Status.PodIP)
		if !podCIDR.Contains(ip) || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP || p.Status.HostIP != node.IP {
			t.Fatalf("pod %s: podIP %s podIPs %v hostIP %s, want an address of %s", name, p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP, podCIDR)
		}
		ips[name] = p.Status.PodIP
	}
	if ips["web-1"] == ips["web-2"] {
		t.Fatalf("both pods have %s", ips["web-1"])
	}
	hc := node.HTTPClient()
	pages := map[string]string{"web-1": ips["web-1"] + ":8080", "web-2": ips["web-2"] + ":8080", "web-1 (over localhost)": ips["web-1"] + ":9090"}
	for name, addr := range pages {
		var body []byte
		waitUntil(t, 30*time.Second, "the node fetching "+name+"'s page", func() bool {
			resp, err := hc.Get("http://" + addr + "/")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, _ = io.ReadAll(resp.Body)
			return resp.StatusCode == 200
		})
		if want := "hello from " + strings.Fields(name)[0]; string(body) != want {
			t.Errorf("%s at %s answered %q, want %q", name, addr, body, want)
		}
	}
	// The exec liveness probe has been passing: no restart.
	if p, err := c.Pods("default").Get(ctx, "web-2"); err != nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("web-2 after its probes: %v %s", err, statusString(p))
	}
	netnsDir := filepath.Join(k.RootDir, "network", "netns")
	if entries, _ := os.ReadDir(netnsDir); len(entries) != 2 {
		t.Errorf("%d pod namespaces, want 2", len(entries))
	}

	// web-1 is deleted as usual; web-2 while the kubelet is down.
	zero := int64(0)
	if _, err := c.Pods("default").Delete(ctx, "web-1", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "web-1's namespace gone", func() bool {
		entries, _ := os.ReadDir(netnsDir)
		return len(entries) == 1
	})
	k.Kill()
	if _, err := c.Pods("default").Delete(ctx, "web-2", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	k.Start()
	waitUntil(t, 60*time.Second, "every pod's namespace, veth and address gone", func() bool {
		entries, _ := os.ReadDir(netnsDir)
		held, _ := filepath.Glob(filepath.Join(k.RootDir, "network", "ipam", "*", "10.*"))
		links := node.Links(t)
		return len(entries) == 0 && len(held) == 0 && !slices.ContainsFunc(links, func(l string) bool { return len(l) > 4 && l[:4] == "veth" })
	})
	if links := node.Links(t); len(links) != 3 {
		t.Errorf("node links %v, want lo, eth0 and the bridge", links)
	}
}

// probeLib begins a probe pod's script. denied(timeout) tells whether
// every address of DENY ("ip:port ...") refuses a connection (or does not
// accept one within timeout seconds); fetch(url, timeout) is the page at
// url, or the error fetching it.
const probeLib = `import os, socket, sys, time, urllib.request
def denied(timeout):
    ok = True
    for addr in os.environ.get("DENY", "").split():
        host, port = addr.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            print(addr, "-> connected", flush=True)
            ok = False
        except OSError as e:
            print(addr, "-> refused:", e, flush=True)
    return ok
def fetch(url, timeout):
    try:
        return urllib.request.urlopen(url, timeout=timeout).read().decode()
    except Exception as e:
        return "error: %s" % e
`

// fetcher fetches each of the space-separated URLS once and exits 0 when
// every page says what is expected and no address of DENY ("ip:port ...")
// accepts a connection.
const fetcher = probeLib + `ok = denied(2)
for url in os.environ["URLS"].split():
    body = fetch(url, 5)
    print(url, "->", repr(body), flush=True)
    ok = ok and body == os.environ["WANT"]
sys.exit(0 if ok else 1)
`

// TestPodsAcrossNodes: three nodes, each in its own namespace, route each
// other's pod CIDRs (host-gw) and serve Services in the kernel: a pod on
// node 1 fetches a page from a pod on node 3 by its pod IP, by its
// Service's cluster IP (as node 1 itself does, and as nodes do at any
// node's address and the Service's node port, and at node 3's address and
// the pod's hostPort), and by the Service's name through the cluster DNS,
// in full and as the search path completes it; it cannot connect to what
// listens on its node's loopback.
func TestPodsAcrossNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := framework.StartUnderlay(t, 3)
	s := u.StartAPIServer(t, nil)
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	var kubelets []*framework.NetKubelet
	for i, node := range u.Nodes {
		kubelets = append(kubelets, framework.StartNetKubelet(t, node, s, ctd, fmt.Sprintf("across-%d", i+1)))
	}
	framework.StartControllers(t, s, controller.Config{})
	c := s.Client
	svc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Type: "NodePort", Selector: map[string]string{"app": "web"}, Ports: []api.ServicePort{{Port: 80, TargetPort: "8080"}}}})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
	farPod := webPod("far", "across-3")
	farPod.Labels = map[string]string{"app": "web"}
	// Published on its node's addresses too (portmap).
	farPod.Spec.Containers[0].Ports[0].HostPort = 18080
	if _, err := c.Pods("default").Create(ctx, farPod); err != nil {
		t.Fatal(err)
	}
	far := waitPod(t, c, "far", 2*time.Minute, "running with its own address", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodRunning && p.Status.PodIP != "" && p.Status.PodIP != u.Nodes[2].IP
	})
	byIP := "http://" + far.Status.PodIP + ":8080/"
	byClusterIP := "http://" + svc.Spec.ClusterIP + "/"
	// The page is up, and its endpoint in node 1's rules, before the pod
	// that fetches starts.
	// The node port answers on every node, the pod's too; the host port
	// on the pod's node.
	byNodePort := map[*framework.NetNode]string{u.Nodes[0]: "http://" + net.JoinHostPort(u.Nodes[1].IP, nodePort) + "/",
		u.Nodes[1]: "http://" + net.JoinHostPort(u.Nodes[2].IP, nodePort) + "/"}
	for _, fetch := range []struct {
		from *framework.NetNode
		url  string
	}{{u.Nodes[0], byIP}, {u.Nodes[0], byClusterIP}, {u.Nodes[0], byNodePort[u.Nodes[0]]}, {u.Nodes[1], byNodePort[u.Nodes[1]]},
		{u.Nodes[0], "http://" + net.JoinHostPort(u.Nodes[2].IP, "18080") + "/"}} {
		url := fetch.url
		waitUntil(t, 30*time.Second, fetch.from.Name+" fetching "+url, func() bool {
			resp, err := fetch.from.HTTPClient().Get(url)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == 200 && string(body) == "hello from far"
		})
	}
	// The pod cannot reach what listens on its node's loopback (here the
	// apiserver's plain port, forwarded), not even at the node's
	// addresses.
	_, apiPort, _ := net.SplitHostPort(kubelets[0].APIAddr)
	n1, _ := c.Nodes().Get(ctx, "across-1")
	_, cidr1, _ := net.ParseCIDR(n1.Spec.PodCIDR)
	gw1 := net.IPv4(cidr1.IP[0], cidr1.IP[1], cidr1.IP[2], 1).String()
	deny := []string{kubelets[0].APIAddr, net.JoinHostPort(gw1, apiPort), net.JoinHostPort(u.Nodes[0].IP, apiPort)}
	near := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "near"},
		Spec: api.PodSpec{NodeName: "across-1", RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
			Name: "fetch", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", fetcher},
			Env: []api.EnvVar{{Name: "URLS", Value: strings.Join([]string{byIP, byClusterIP, "http://web.default.svc.cluster.local/", "http://web/"}, " ")},
				{Name: "WANT", Value: "hello from far"}, {Name: "DENY", Value: strings.Join(deny, " ")}},
		}}}}
	if _, err := c.Pods("default").Create(ctx, near); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, "near", 2*time.Minute, "ended", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
	})
	if p.Status.Phase != api.PodSucceeded {
		t.Errorf("the pod on node 1 could not fetch the page of the pod on node 3: %s", statusString(p))
	}
}
