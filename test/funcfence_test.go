package test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// TestFunctionPodsServeThePlatformOnly (issue 25, hole 7): on two nodes
// whose pods have their own network, a pod of another namespace, on the
// function pod's node and on the other, cannot reach the function at its
// Service address, at its pod's address and serving port, nor at a node
// port leading to it (refused, within the fetcher's bound), while it
// reaches a plain pod the same ways; both nodes call the function at its
// Service address and at its pod's, and a call through the apiserver (its
// runner on node 1) works.
func TestFunctionPodsServeThePlatformOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportFunctionRuntime(t)
	u := framework.StartUnderlay(t, 2)
	s := u.StartAPIServer(t, nil)
	framework.StartNetFuncRunner(t, u.Nodes[0], s)
	framework.StartControllers(t, s, controller.Config{})
	framework.StartScheduler(t, s, scheduler.Config{})
	nodes := map[string]*framework.NetNode{}
	kubelets := map[string]*framework.NetKubelet{}
	for i, node := range u.Nodes {
		name := fmt.Sprintf("fence-%d", i+1)
		nodes[name] = node
		kubelets[name] = framework.StartNetKubelet(t, node, s, ctd, name)
	}
	c := s.Client

	funcTemplate(t, s, "secret", "def run(arg):\n    return 'secret of default: ' + arg\n", "RETURN", "RETURN",
		map[string]any{"initInstanceNum": 1, "minInstanceNum": 1, "maxInstanceNum": 1})
	var fnAddr api.EndpointAddress
	waitUntil(t, 3*time.Minute, "the function's pod ready in its Service's endpoints", func() bool {
		ep, err := c.Endpoints("default").Get(ctx, function.ObjectName("secret"))
		if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || len(ep.Subsets[0].Ports) == 0 {
			return false
		}
		// Each pod has its own port: the address names it.
		fnAddr = ep.Subsets[0].Addresses[0]
		if fnAddr.Port == 0 {
			fnAddr.Port = ep.Subsets[0].Ports[0].Port
		}
		return fnAddr.NodeName != ""
	})
	fnSvc, err := c.Services("default").Get(ctx, function.ObjectName("secret"))
	if err != nil {
		t.Fatal(err)
	}
	near := fnAddr.NodeName
	far := "fence-1"
	if near == far {
		far = "fence-2"
	}
	// Node ports to the function and to a plain page on its node.
	np, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "secret-np"},
		Spec: api.ServiceSpec{Type: "NodePort", Selector: function.Selector("secret"), Ports: []api.ServicePort{{Port: 80, TargetPort: function.PortName}}}})
	if err != nil {
		t.Fatal(err)
	}
	web := webPod("web", near)
	web.Labels = map[string]string{"app": "web"}
	if _, err := c.Pods("default").Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	webSvc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Type: "NodePort", Selector: map[string]string{"app": "web"}, Ports: []api.ServicePort{{Port: 80, TargetPort: "8080"}}}})
	if err != nil {
		t.Fatal(err)
	}
	webIP := waitPod(t, c, "web", 2*time.Minute, "running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning && p.Status.PodIP != "" }).Status.PodIP

	fnPod := net.JoinHostPort(fnAddr.IP, strconv.Itoa(int(fnAddr.Port)))
	fnNodePort := strconv.Itoa(int(np.Spec.Ports[0].NodePort))
	webNodePort := strconv.Itoa(int(webSvc.Spec.Ports[0].NodePort))
	// Every node's rules lead the Services to their pods, so that a
	// refusal below is the fence's, not a Service without endpoints.
	for name, node := range nodes {
		deadline := time.Now().Add(time.Minute)
		for {
			out, err := node.Command(ctx, "iptables-save", "-t", "nat").CombinedOutput()
			rules := string(out)
			if err == nil && strings.Count(rules, "--to-destination "+fnPod) >= 2 && strings.Contains(rules, "--to-destination "+webIP+":8080") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's rules do not lead to the function's pod %s and the page's %s: %v\n%s", name, fnPod, webIP, err, rules)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// The platform: each node, at the Service address and the pod's.
	for name, node := range nodes {
		for _, url := range []string{"http://" + fnSvc.Spec.ClusterIP + function.InvokePath, "http://" + fnPod + function.InvokePath} {
			resp, err := node.HTTPClient().Post(url, "text/plain", strings.NewReader("from "+name))
			if err != nil {
				t.Fatalf("node %s calling %s: %v", name, url, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "secret of default: from "+name) {
				t.Errorf("node %s calling %s: %d %s", name, url, resp.StatusCode, body)
			}
		}
	}
	if v := syncInvoke(t, s, "secret", "through the apiserver"); v.Status != api.InstanceSucceeded || v.Result != "secret of default: through the apiserver" {
		t.Errorf("a call through the apiserver: %+v", v)
	}

	// Pods of another namespace, on the function's node and on the other.
	if _, err := c.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "intruder"}}); err != nil {
		t.Fatal(err)
	}
	deny := []string{net.JoinHostPort(fnSvc.Spec.ClusterIP, "80"), fnPod,
		net.JoinHostPort(nodes[near].IP, fnNodePort), net.JoinHostPort(nodes[far].IP, fnNodePort)}
	control := []string{"http://" + webSvc.Spec.ClusterIP + "/", "http://" + webIP + ":8080/",
		"http://" + net.JoinHostPort(nodes[near].IP, webNodePort) + "/", "http://" + net.JoinHostPort(nodes[far].IP, webNodePort) + "/"}
	for _, node := range []string{near, far} {
		p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "on-" + node, Namespace: "intruder"},
			Spec: api.PodSpec{NodeName: node, RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
				Name: "fetch", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", fetcher},
				Env: []api.EnvVar{{Name: "URLS", Value: strings.Join(control, " ")}, {Name: "WANT", Value: "hello from web"},
					{Name: "DENY", Value: strings.Join(deny, " ")}},
			}}}}
		if _, err := c.Pods("intruder").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range []string{near, far} {
		name := "on-" + node
		var p *api.Pod
		waitUntil(t, 2*time.Minute, name+" ended", func() bool {
			p, err = c.Pods("intruder").Get(ctx, name)
			return err == nil && (p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed)
		})
		if p.Status.Phase != api.PodSucceeded {
			t.Errorf("pod %s of another namespace (function on %s): %s\n%s", name, near, statusString(p), podLog(kubelets[node], p))
		}
	}
	// A node port never leads to a function pod, whoever asks: the node
	// masquerades it from the pod range.
	for name, node := range nodes {
		conn, err := node.DialContext(ctx, "tcp", net.JoinHostPort(node.IP, fnNodePort))
		if err == nil {
			conn.Close()
			t.Errorf("node %s reached the function at its own node port", name)
		}
	}
}

// podLog is the log of the pod's containers, read from its kubelet's dir
// (the apiserver, on the machine's loopback, cannot reach a kubelet on an
// underlay).
func podLog(k *framework.NetKubelet, p *api.Pod) string {
	files, _ := filepath.Glob(filepath.Join(k.RootDir, "pods", p.UID, "logs", "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}
