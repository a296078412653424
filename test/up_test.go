package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/images"
	"minik8s/pkg/api"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
	"minik8s/test/harness"
)

// upCluster is a `minik8s up` run from the built binaries, as the README's
// first session runs it, with an extra kubelet joining it.
type upCluster struct {
	t      *testing.T
	bin    string // the built binaries
	server string // the apiserver's URL, in machine
	// machine, when set, is the namespace standing for the machine.
	machine *framework.NetNode
	up      *binProc
	kubelet *binProc // the extra node, once started
}

// TestMinik8sUpBinaries runs the README's first session with the built
// binaries: `minik8s up` on a private data dir (and so its own containerd),
// an extra `kubelet` joining in a namespace of its own made by
// hack/netns-node, `kubectl apply -f yaml/` (twice: created, unchanged),
// kubectl get, exec, logs and describe, a tutorial's kubectl commands
// (kubectlAsAUser), the Service by cluster IP and
// node port, a branching function chain and three charts installed with
// Helm 4, then Ctrl-C, after which
// nothing of the cluster may be left: no process, mount, socket or pod
// veth. The whole run is inside a namespace the test makes, standing for
// the machine: pods get their own addresses by default, and nothing may be
// configured on the machine's own network.
//
// The first run on a machine builds the runtime image (debootstrap, cached
// in /var/cache/minik8s): give `go test` a long -timeout (make test: 45m).
func TestMinik8sUpBinaries(t *testing.T) {
	// Long, and on a cluster of its own: it runs beside the other such tests.
	t.Parallel()
	if os.Geteuid() != 0 {
		harness.NeedE2E(t, "minik8s up needs root")
	}
	if _, err := os.Stat(containerdtest.ContainerdBinary); err != nil {
		harness.NeedE2E(t, "containerd is not installed (%s): %v", containerdtest.ContainerdBinary, err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		harness.NeedE2E(t, "runc is not installed: %v", err)
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if _, err := os.Stat(filepath.Join(images.DefaultCacheDir, "rootfs")); err != nil {
			harness.NeedE2E(t, "building %s needs debootstrap: %v", images.PythonRuntimeName, err)
		}
	}
	root := moduleRoot(t)
	bin := harness.Binaries(t)
	u := framework.StartUnderlay(t, 1)
	machine := u.Nodes[0]
	netnsNode := filepath.Join(root, "hack", "netns-node")

	// A private dir in the binary's run dir (TMPDIR, see harness.Main),
	// so that what a killed test binary leaves is swept by the next one.
	// It is short enough: the containerd socket lives under it and unix
	// socket paths are limited to 108 bytes.
	tmp, err := os.MkdirTemp("", "up")
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(tmp, "data")
	port, securePort, gatewayPort := framework.FreePort(t), framework.FreePort(t), framework.FreePort(t)
	// The README's addresses, on the bridge hack/netns-node makes in the
	// machine's namespace: they and the cluster's ranges (minik8s up's
	// defaults) exist only in the namespaces of this test.
	const (
		nodeIP  = "10.98.0.1"
		extraIP = "10.98.0.2"
	)
	_, svcRange, _ := net.ParseCIDR(api.DefaultServiceCIDR)
	c := &upCluster{t: t, bin: bin, server: "http://127.0.0.1:" + strconv.Itoa(port), machine: machine}
	var tasks *taskIDs // the containers its containerd ran, once it is started

	// Runs last: whatever the test left, it goes, and then the dir.
	t.Cleanup(func() {
		if t.Failed() {
			if c.up != nil {
				t.Logf("minik8s up's output:\n%s", c.up.logTail())
			}
			if c.kubelet != nil {
				t.Logf("the extra kubelet's output:\n%s", c.kubelet.logTail())
			}
			t.Logf("containerd's log:\n%s", fileTail(filepath.Join(data, "containerd.log"), 3000))
		}
		sweepUpRun(t, tmp, tasks)
	})

	// The README's extra node: a namespace on a bridge of the machine.
	extraNS := u.NamespaceName("extra")
	// In the machine's network only (as hack/netns-node exec does): `ip
	// netns exec` would add a mount namespace the new one's mount stays in.
	if out, err := exec.Command("nsenter", "--net="+machine.Path(), netnsNode, "add", extraNS, extraIP).CombinedOutput(); err != nil {
		t.Fatalf("hack/netns-node add: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(netnsNode, "del", extraNS).CombinedOutput(); err != nil {
			t.Errorf("hack/netns-node del: %v\n%s", err, out)
		}
	})

	// make up, privately: SIGINT if this test dies, so that minik8s up
	// does its Ctrl-C cleanup (SIGKILL would leave its containerd, which
	// runs in its own process group, and the containers). nsenter execs
	// it: the signals reach minik8s itself.
	c.up = startBinary(t, "minik8s up", tmp, filepath.Join(tmp, "up.log"), nil, syscall.SIGINT,
		"nsenter", "--net="+machine.Path(), filepath.Join(bin, "minik8s"), "up", "--port", strconv.Itoa(port), "--nats-port", strconv.Itoa(framework.FreePort(t)), "--secure-port", strconv.Itoa(securePort), "--gateway-port", strconv.Itoa(gatewayPort), "--data-dir", data,
		"--node-ip", nodeIP)
	t.Cleanup(func() { c.up.stop(t, 3*time.Minute) })
	tasks = watchTaskIDs(data)

	// mkctl get nodes: the first run may build the image first.
	upNode := c.waitNodesReady(25*time.Minute, nodeIP)
	t.Logf("node %s (%s) is ready", upNode[nodeIP], nodeIP)

	// The admin kubeconfig minik8s up wrote reaches the secure port, as
	// kubectl would use it: mkctl with no server but --kubeconfig.
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	cmd := machine.Command(context.Background(), filepath.Join(bin, "mkctl"), "--kubeconfig", kubeconfig, "get", "nodes")
	cmd.Env = []string{"HOME=" + tmp, "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), upNode[nodeIP]) {
		t.Errorf("mkctl --kubeconfig %s get nodes: %v\n%s", kubeconfig, err, out)
	}

	// The extra node, as the README starts it from the dir minik8s up
	// runs in (the kubelet's defaults: minik8s up's containerd, a root
	// under data/): it joins the secure port with the node token.
	token, err := os.ReadFile(filepath.Join(data, "node-token"))
	if err != nil {
		t.Fatal(err)
	}
	c.kubelet = startBinary(t, "kubelet", tmp, filepath.Join(tmp, "kubelet.log"), nil, syscall.SIGINT,
		netnsNode, "exec", extraNS, filepath.Join(bin, "kubelet"), "--apiserver", "https://"+nodeIP+":"+strconv.Itoa(securePort),
		"--token", strings.TrimSpace(string(token)), "--node-ip", extraIP)
	t.Cleanup(func() { c.kubelet.stop(t, 2*time.Minute) })
	nodes := c.waitNodesReady(2*time.Minute, nodeIP, extraIP)

	// kubectl apply -f yaml/ with the admin kubeconfig (as a Kubernetes
	// user would; mkctl apply takes the same files), and the pods of the
	// manifests run, on both nodes.
	yamlDir := filepath.Join(root, "yaml") + "/"
	if out := c.mustKubectl(kubeconfig, "apply", "-f", yamlDir); !strings.Contains(out, "func.minik8s.io/classify created") || !strings.Contains(out, "replicaset.apps/web created") {
		t.Errorf("kubectl apply -f yaml/:\n%s", out)
	}
	c.waitFor(10*time.Minute, "the pods of yaml/ running and ready on both nodes", func() (bool, string) {
		var pods api.PodList
		if err := c.getJSON(&pods, "pods"); err != nil {
			return false, err.Error()
		}
		var state []string
		web, server := 0, false
		onNode, agents := map[string]int{}, map[string]int{}
		for i := range pods.Items {
			p := &pods.Items[i]
			ok := p.Status.Phase == api.PodRunning && podReady(p) && p.DeletionTimestamp == nil
			state = append(state, fmt.Sprintf("%s %s ready=%v on %q at %s", p.Name, p.Status.Phase, ok, p.Spec.NodeName, p.Status.PodIP))
			if !ok {
				continue
			}
			onNode[p.Spec.NodeName]++
			switch {
			case p.Name == "http-server":
				server = true
			case p.Labels["app"] == "web":
				web++
			case p.Labels["app"] == "node-agent":
				agents[p.Spec.NodeName]++
			}
		}
		// The DaemonSet's agent: one on each node, the joined one too.
		done := server && web == 3 && onNode[nodes[nodeIP]] > 0 && onNode[nodes[extraIP]] > 0 &&
			agents[nodes[nodeIP]] == 1 && agents[nodes[extraIP]] == 1 && len(agents) == 2
		return done, strings.Join(state, "; ")
	})

	// kubectl sees what a Kubernetes user expects: a second apply changes
	// nothing; get shows every kind's columns; exec and logs reach pods on
	// both nodes through their kubelets' TLS ports.
	if out := c.mustKubectl(kubeconfig, "apply", "-f", yamlDir); strings.Contains(out, "created") || strings.Contains(out, "configured") {
		t.Errorf("the second kubectl apply -f yaml/ changed something:\n%s", out)
	}
	out := c.mustKubectl(kubeconfig, "get", "nodes,pods,rs,svc,cm,funcs", "-o", "wide")
	for _, want := range []string{"node/", "pod/http-server", "replicaset.apps/web", "service/web", "configmap/app-config", "func.minik8s.io/classify"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get nodes,pods,rs,svc,cm,funcs -o wide lacks %q:\n%s", want, out)
		}
	}
	var webPods api.PodList
	if err := c.getJSON(&webPods, "pods", "-l", "app=web"); err != nil {
		t.Fatal(err)
	}
	for _, p := range webPods.Items {
		if out := c.mustKubectl(kubeconfig, "exec", p.Name, "--", "cat", "/etc/hostname"); strings.TrimSpace(out) == "" {
			t.Errorf("kubectl exec %s (on %s): no output", p.Name, p.Spec.NodeName)
		}
	}
	c.mustKubectl(kubeconfig, "logs", "http-server", "--timestamps")
	if out := c.mustKubectl(kubeconfig, "describe", "pod", "http-server"); !strings.Contains(out, "Started") {
		t.Errorf("kubectl describe pod http-server shows no Started event:\n%s", out)
	}
	// A tutorial's everyday kubectl commands, as a user types them.
	kubectlBin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	kubectlAsAUser(t, func(args ...string) (string, string, error) {
		return c.inMachine(4*time.Minute, kubectlBin, []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}, args...)
	}, containerdtest.PythonRuntimeImage)

	// The Service answers on its cluster IP, from the service range, and
	// on its node port at both nodes' addresses.
	var svc api.Service
	if err := c.getJSON(&svc, "services", "web"); err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(svc.Spec.ClusterIP); ip == nil || !svcRange.Contains(ip) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("service web: cluster IP %q (want one of %s), ports %+v (want a node port)", svc.Spec.ClusterIP, svcRange, svc.Spec.Ports)
	}
	nodePort := strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
	for _, url := range []string{"http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/",
		"http://" + net.JoinHostPort(nodeIP, nodePort) + "/", "http://" + net.JoinHostPort(extraIP, nodePort) + "/"} {
		c.waitFor(2*time.Minute, "GET "+url+" from the machine", func() (bool, string) {
			resp, err := machine.HTTPClient().Get(url)
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		})
	}

	// yaml/func-demo.yaml: classify goes left to double for a number,
	// right to shout otherwise.
	for _, call := range []struct{ arg, want string }{{" 21 ", "42"}, {"hello", "HELLO!"}} {
		out := c.mustMkctl(6*time.Minute, "func", "invoke", "classify", "-d", call.arg, "--wait=5m")
		if got := strings.TrimSpace(out); got != call.want {
			t.Errorf("mkctl func invoke classify -d %q = %q, want %q", call.arg, got, call.want)
		}
	}

	// yaml/trigger-demo.yaml: the same chain through the function gateway.
	gw := "http://127.0.0.1:" + strconv.Itoa(gatewayPort) + "/classify"
	c.waitFor(2*time.Minute, "POST "+gw, func() (bool, string) {
		resp, err := machine.HTTPClient().Post(gw, "text/plain", strings.NewReader("21"))
		if err != nil {
			return false, err.Error()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && string(body) == "42", resp.Status + " " + string(body)
	})

	// Helm 4's three charts (test/helm_test.go).
	helmCharts(c, kubeconfig)

	// Ctrl-C. Everything of the cluster, the extra kubelet's containers
	// and pod networks included (they live in minik8s up's containerd and
	// data dir), must go.
	pods := procsInNetns(podNetns(tmp))
	before := procsOf(tmp, c.up.cmd.Process.Pid, c.kubelet.cmd.Process.Pid)
	shims := 0
	for _, p := range before {
		if strings.Contains(p.Cmdline, "containerd-shim") {
			shims++
		}
	}
	if shims == 0 || len(pods) == 0 {
		t.Fatalf("%d shims under %s and %d pod processes while pods run: the leftover checks would prove nothing\n%v",
			shims, data, len(pods), before)
	}
	before = uniqueProcs(before, pods)
	t.Logf("before Ctrl-C: %d processes of the cluster, %d shims, %d in pods", len(before), shims, len(pods))
	c.up.interrupt()
	if !c.up.wait(3 * time.Minute) {
		t.Fatal("minik8s up still running 3 minutes after Ctrl-C")
	}
	if _, err := c.up.exited(); err != nil {
		t.Errorf("minik8s up exited with %v after Ctrl-C, want status 0", err)
	}
	c.kubelet.interrupt()
	if !c.kubelet.wait(2 * time.Minute) {
		t.Fatal("the extra kubelet still running 2 minutes after Ctrl-C")
	}
	if _, err := c.kubelet.exited(); err != nil {
		t.Errorf("the extra kubelet exited with %v after Ctrl-C, want status 0", err)
	}

	checkNothingLeft(t, tmp, machine.Path(), before, tasks, port, svcRange, nodeIP, extraIP)
	// No pod's veth is left on either node's bridge.
	for _, ns := range []string{machine.Path(), filepath.Join("/run/netns", extraNS)} {
		for _, l := range framework.NetnsLinks(t, ns) {
			if strings.HasPrefix(l, "veth") {
				t.Errorf("pod link %s left in %s after Ctrl-C", l, ns)
			}
		}
	}
}

// mkctl runs bin/mkctl against the cluster as the README's shell does
// (MINIK8S_SERVER, bin/ on PATH), in the machine's namespace if any.
func (c *upCluster) mkctl(timeout time.Duration, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "mkctl"), args...)
	if c.machine != nil {
		cmd = c.machine.Command(ctx, filepath.Join(c.bin, "mkctl"), args...)
	}
	cmd.Env = append(os.Environ(), "MINIK8S_SERVER="+c.server, "PATH="+c.bin+":"+os.Getenv("PATH"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func (c *upCluster) mustMkctl(timeout time.Duration, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.mkctl(timeout, args...)
	if err != nil {
		c.t.Fatalf("mkctl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// mustKubectl runs the real kubectl with kubeconfig, in the machine's
// namespace, and fails the test when it fails.
func (c *upCluster) mustKubectl(kubeconfig string, args ...string) string {
	c.t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		harness.NeedE2E(c.t, "kubectl is not installed: %v", err)
	}
	out, errOut, err := c.inMachine(2*time.Minute, bin, []string{"KUBECONFIG=" + kubeconfig, "HOME=" + c.t.TempDir()}, args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// inMachine runs bin in the machine's namespace with env added to the
// test's, and returns its output.
func (c *upCluster) inMachine(timeout time.Duration, bin string, env []string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := c.machine.Command(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// getJSON decodes `mkctl get ARGS -o json`.
func (c *upCluster) getJSON(into any, args ...string) error {
	out, errOut, err := c.mkctl(time.Minute, append([]string{"get"}, append(args, "-o", "json")...)...)
	if err != nil {
		return fmt.Errorf("mkctl get %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut))
	}
	return json.Unmarshal([]byte(out), into)
}

// waitFor polls cond until it holds, failing the test after timeout or as
// soon as minik8s up or the extra kubelet exits.
func (c *upCluster) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		for _, p := range []*binProc{c.up, c.kubelet} {
			if p == nil {
				continue
			}
			if done, err := p.exited(); done {
				c.t.Fatalf("%s exited (%v) while waiting for %s; last state: %s", p.name, err, what, state)
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitNodesReady waits until `mkctl get nodes` shows a Ready node on each
// address, and returns their names by address.
func (c *upCluster) waitNodesReady(timeout time.Duration, ips ...string) map[string]string {
	c.t.Helper()
	names := map[string]string{}
	c.waitFor(timeout, fmt.Sprintf("Ready nodes on %v", ips), func() (bool, string) {
		var nodes api.NodeList
		if err := c.getJSON(&nodes, "nodes"); err != nil {
			return false, err.Error()
		}
		ready := map[string]string{}
		var state []string
		for _, n := range nodes.Items {
			ok := false
			for _, cond := range n.Status.Conditions {
				ok = ok || cond.Type == api.NodeReady && cond.Status == api.ConditionTrue
			}
			for _, a := range n.Status.Addresses {
				if a.Type == api.NodeInternalIP && ok {
					ready[a.Address] = n.Name
				}
			}
			state = append(state, fmt.Sprintf("%s ready=%v %v", n.Name, ok, n.Status.Addresses))
		}
		for _, ip := range ips {
			if ready[ip] == "" {
				return false, strings.Join(state, "; ")
			}
		}
		names = ready
		return true, ""
	})
	return names
}

// sweepUpRun removes whatever a minik8s up run in dir left (processes of
// its node addresses, runc containers of tasks), failing the test if there
// was anything, then the dir itself.
func sweepUpRun(t *testing.T, dir string, tasks *taskIDs, nodeIPs ...string) {
	t.Helper()
	did := killLeftovers(dir, nodeIPs...)
	if tasks != nil {
		did = append(did, removeRuncLeftovers(tasks.all())...)
	}
	if len(did) > 0 {
		t.Errorf("cleanup had to remove what the cluster left:\n  %s", strings.Join(did, "\n  "))
	}
	if left := harness.MountsUnder(dir); len(left) > 0 {
		t.Errorf("cleanup: mounts left under %s, not removing it: %v", dir, left)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}
