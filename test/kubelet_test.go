package test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/containerd"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// node is an apiserver, a containerd with the python image, and a kubelet.
type node struct {
	api     *framework.APIServer
	ctd     *containerdtest.Containerd
	kubelet *framework.Kubelet
	c       *client.Client
	name    string
	ip      string
}

func startNode(t *testing.T, name, ip string) *node {
	t.Helper()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	as := framework.StartAPIServer(t)
	n := &node{api: as, ctd: ctd, c: as.Client, name: name, ip: ip}
	n.kubelet = framework.StartKubelet(t, as.URL, ctd, name, ip)
	return n
}

// pythonPod is a pod of one python container bound to node.
func pythonPod(name, nodeName, script string) *api.Pod {
	return &api.Pod{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.PodSpec{
			NodeName: nodeName,
			Containers: []api.Container{{
				Name:    "main",
				Image:   containerdtest.PythonRuntimeImage,
				Command: []string{"python3", "-c", script},
			}},
		},
	}
}

const httpServer = `import http.server, os, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/unhealthy":
            self.send_response(500); self.end_headers(); return
        body = ("hello from " + os.environ["POD_NAME"]).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
print("serving on", os.environ["HOST"], os.environ["PORT"], flush=True)
http.server.HTTPServer((os.environ["HOST"], int(os.environ["PORT"])), H).serve_forever()
`

// waitPod polls the pod until cond holds, failing after the deadline.
func waitPod(t *testing.T, c *client.Client, name string, timeout time.Duration, what string, cond func(*api.Pod) bool) *api.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *api.Pod
	for {
		p, err := c.Pods("default").Get(context.Background(), name)
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: %s not reached in %s; last status %s", name, what, timeout, statusString(last))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func statusString(p *api.Pod) string {
	if p == nil {
		return "<none>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%s message=%q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	for _, cs := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, " [%s ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
		if s := cs.State.Waiting; s != nil {
			fmt.Fprintf(&b, " waiting %s %q", s.Reason, s.Message)
		}
		if s := cs.State.Running; s != nil {
			fmt.Fprintf(&b, " running")
		}
		if s := cs.State.Terminated; s != nil {
			fmt.Fprintf(&b, " terminated %d %s %q", s.ExitCode, s.Reason, s.Message)
		}
		b.WriteString("]")
	}
	return b.String()
}

func podReady(p *api.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == api.PodReady {
			return c.Status == api.ConditionTrue
		}
	}
	return false
}

func waitGone(t *testing.T, c *client.Client, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := c.Pods("default").Get(context.Background(), name)
		if err != nil && strings.Contains(err.Error(), "not found") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still there after %s (err %v)", name, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// nodeContainers lists the containers labelled with a node.
func nodeContainers(t *testing.T, rt *containerd.Runtime, nodeName string) []containerd.Container {
	t.Helper()
	cs, err := rt.ListContainers(context.Background(), map[string]string{containerd.LabelNode: nodeName})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestKubeletRegistersNodeWithHeartbeat(t *testing.T) {
	t.Parallel()
	n := startNode(t, "node-hb", "127.0.0.21")
	var node *api.Node
	deadline := time.Now().Add(30 * time.Second)
	var first time.Time
	for {
		var err error
		node, err = n.c.Nodes().Get(context.Background(), n.name)
		if err == nil && len(node.Status.Conditions) > 0 {
			for _, c := range node.Status.Conditions {
				if c.Type == api.NodeReady && c.Status == api.ConditionTrue && c.LastHeartbeatTime != nil {
					if first.IsZero() {
						first = *c.LastHeartbeatTime
					} else if c.LastHeartbeatTime.After(first) {
						goto renewed
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: no renewed Ready heartbeat: %+v", n.name, node)
		}
		time.Sleep(200 * time.Millisecond)
	}
renewed:
	if node.Status.Capacity[api.ResourceCPU] == "" || node.Status.Capacity[api.ResourceMemory] == "" {
		t.Errorf("capacity = %v", node.Status.Capacity)
	}
	if len(node.Status.Addresses) == 0 || node.Status.Addresses[0].Address != n.ip {
		t.Errorf("addresses = %v", node.Status.Addresses)
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port == 0 {
		t.Fatalf("no kubelet port")
	}
	code, body := httpGet(t, "http://"+net.JoinHostPort(n.ip, strconv.Itoa(int(port)))+"/healthz")
	if code != 200 || !strings.Contains(body, "ok") {
		t.Errorf("kubelet healthz = %d %q", code, body)
	}
	// Another component marks the node NotReady; the kubelet sets it back.
	node.ResourceVersion = ""
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == api.NodeReady {
			node.Status.Conditions[i].Status = api.ConditionUnknown
		}
	}
	if _, err := n.c.Nodes().UpdateStatus(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		node, _ = n.c.Nodes().Get(context.Background(), n.name)
		for _, c := range node.Status.Conditions {
			if c.Type == api.NodeReady && c.Status == api.ConditionTrue {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not Ready again: %+v", node.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestKubeletRunsServesAndDeletesPod(t *testing.T) {
	n := startNode(t, "node-a", "127.0.0.11")
	ctx := context.Background()
	p := pythonPod("web", n.name, httpServer)
	p.Spec.Containers[0].Ports = []api.ContainerPort{{Name: "http"}}
	p.Spec.Containers[0].ReadinessProbe = &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "http"}, PeriodSeconds: 1}
	created, err := n.c.Pods("default").Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, n.c, "web", 60*time.Second, "Running and Ready", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodRunning && podReady(p)
	})
	if p.Status.PodIP != n.ip || p.Status.HostIP != n.ip {
		t.Errorf("podIP %q hostIP %q, want %s", p.Status.PodIP, p.Status.HostIP, n.ip)
	}
	cs := p.Status.ContainerStatuses
	if len(cs) != 1 || len(cs[0].Ports) != 1 || cs[0].Ports[0].Name != "http" || cs[0].Ports[0].ContainerPort == 0 {
		t.Fatalf("container statuses = %+v", cs)
	}
	port := cs[0].Ports[0].ContainerPort
	code, body := httpGet(t, fmt.Sprintf("http://%s:%d/", p.Status.PodIP, port))
	if code != 200 || body != "hello from web" {
		t.Errorf("GET pod = %d %q", code, body)
	}

	// The container is in containerd's minik8s namespace, labelled.
	id := strings.TrimPrefix(cs[0].ContainerID, "containerd://")
	st, err := n.ctd.Runtime.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatalf("container %s of the pod: %v", id, err)
	}
	want := map[string]string{containerd.LabelNode: n.name, containerd.LabelPodNamespace: "default", containerd.LabelPodName: "web",
		containerd.LabelPodUID: created.UID, containerd.LabelContainerName: "main"}
	for k, v := range want {
		if st.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, st.Labels[k], v)
		}
	}
	if st.State != containerd.StateRunning {
		t.Errorf("container state %s", st.State)
	}

	// Deleting: the kubelet stops the container within the grace period
	// and removes task, container and snapshot, then the pod object (how
	// long that takes is measured by BenchmarkKubeletPodDelete).
	grace := int64(5)
	if _, err := n.c.Pods("default").Delete(ctx, "web", client.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, n.c, "web", 60*time.Second)
	if left := nodeContainers(t, n.ctd.Runtime, n.name); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	if ok, err := n.ctd.Runtime.SnapshotExists(ctx, id); err != nil || ok {
		t.Errorf("snapshot %s left: %v %v", id, ok, err)
	}
}

func TestKubeletRestartPolicies(t *testing.T) {
	n := startNode(t, "node-r", "127.0.0.13")
	ctx := context.Background()

	t.Run("Always restarts a killed container", func(t *testing.T) {
		if _, err := n.c.Pods("default").Create(ctx, pythonPod("always", n.name, httpServer)); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, n.c, "always", 60*time.Second, "Running", func(p *api.Pod) bool {
			return p.Status.Phase == api.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		})
		first := p.Status.ContainerStatuses[0]
		if err := n.ctd.Runtime.Signal(ctx, strings.TrimPrefix(first.ContainerID, "containerd://"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		p = waitPod(t, n.c, "always", 60*time.Second, "restarted", func(p *api.Pod) bool {
			cs := p.Status.ContainerStatuses[0]
			return cs.RestartCount == 1 && cs.State.Running != nil
		})
		cs := p.Status.ContainerStatuses[0]
		if cs.ContainerID == first.ContainerID {
			t.Errorf("same container id after restart")
		}
		if cs.LastState.Terminated == nil || cs.LastState.Terminated.ExitCode != 137 {
			t.Errorf("last state = %+v, want terminated with 137", cs.LastState)
		}
		if p.Status.Phase != api.PodRunning {
			t.Errorf("phase %s", p.Status.Phase)
		}
		// Kill again: the back-off shows as CrashLoopBackOff before the
		// next start.
		if err := n.ctd.Runtime.Signal(ctx, strings.TrimPrefix(cs.ContainerID, "containerd://"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitPod(t, n.c, "always", 60*time.Second, "CrashLoopBackOff", func(p *api.Pod) bool {
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "CrashLoopBackOff"
		})
		waitPod(t, n.c, "always", 60*time.Second, "second restart", func(p *api.Pod) bool {
			cs := p.Status.ContainerStatuses[0]
			return cs.RestartCount == 2 && cs.State.Running != nil
		})
		if got := len(nodeContainers(t, n.ctd.Runtime, n.name)); got != 1 {
			t.Errorf("%d containers for one pod after restarts", got)
		}
	})

	t.Run("Never ends Failed with the exit code", func(t *testing.T) {
		p := pythonPod("never", n.name, "import sys; print('bye'); sys.exit(3)")
		p.Spec.RestartPolicy = api.RestartPolicyNever
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p = waitPod(t, n.c, "never", 60*time.Second, "Failed", func(p *api.Pod) bool { return p.Status.Phase == api.PodFailed })
		term := p.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 3 || term.Reason != "Error" || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("status = %s", statusString(p))
		}
	})

	t.Run("OnFailure completes a successful container", func(t *testing.T) {
		p := pythonPod("onfailure", n.name, "print('done')")
		p.Spec.RestartPolicy = api.RestartPolicyOnFailure
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p = waitPod(t, n.c, "onfailure", 60*time.Second, "Succeeded", func(p *api.Pod) bool { return p.Status.Phase == api.PodSucceeded })
		if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
			t.Errorf("status = %s", statusString(p))
		}
	})
}

func TestKubeletMissingImageAndOOM(t *testing.T) {
	t.Parallel()
	n := startNode(t, "node-i", "127.0.0.14")
	ctx := context.Background()

	t.Run("missing image", func(t *testing.T) {
		// A registry on a loopback port nobody listens on: the pull fails
		// at once, without traffic leaving the machine.
		p := pythonPod("noimage", n.name, "print(1)")
		p.Spec.Containers[0].Image = "127.0.0.1:9/minik8s/missing:latest"
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p = waitPod(t, n.c, "noimage", 60*time.Second, "ErrImagePull", func(p *api.Pod) bool {
			if len(p.Status.ContainerStatuses) == 0 {
				return false
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff")
		})
		if w := p.Status.ContainerStatuses[0].State.Waiting; !strings.Contains(w.Message, "missing") {
			t.Errorf("message %q does not name the image", w.Message)
		}
		if p.Status.Phase != api.PodPending {
			t.Errorf("phase %s", p.Status.Phase)
		}

		never := pythonPod("neverpull", n.name, "print(1)")
		never.Spec.Containers[0].Image = "minik8s/not-built:latest"
		never.Spec.Containers[0].ImagePullPolicy = "Never"
		if _, err := n.c.Pods("default").Create(ctx, never); err != nil {
			t.Fatal(err)
		}
		waitPod(t, n.c, "neverpull", 60*time.Second, "ErrImagePull", func(p *api.Pod) bool {
			if len(p.Status.ContainerStatuses) == 0 {
				return false
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && strings.Contains(w.Message, "not present")
		})
		for _, c := range nodeContainers(t, n.ctd.Runtime, n.name) {
			if name := c.Labels[containerd.LabelPodName]; name == "noimage" || name == "neverpull" {
				t.Errorf("a container runs for %s", name)
			}
		}
	})

	t.Run("memory limit OOM kill", func(t *testing.T) {
		p := pythonPod("hog", n.name, "x = bytearray(512 * 1024 * 1024)\nprint(len(x))")
		p.Spec.RestartPolicy = api.RestartPolicyNever
		p.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceMemory: "64Mi", api.ResourceCPU: "500m"}
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p = waitPod(t, n.c, "hog", 60*time.Second, "Failed", func(p *api.Pod) bool { return p.Status.Phase == api.PodFailed })
		term := p.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
			t.Errorf("status = %s", statusString(p))
		}
	})
}
