package test

import (
	"context"
	"encoding/base64"
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
	"sync"
	"syscall"
	"testing"
	"time"

	"minik8s/images"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
	"minik8s/test/harness"
)

// TestMinik8sUpFuncRunners is the check with the built binaries:
// `minik8s up --funcrunners 0` and two `funcrunner` processes drive 100
// calls of a 3-step chain on real pods; one runner is SIGKILLed a second
// in; every call still ends Succeeded with each step recorded once, and
// Ctrl-C leaves nothing of the cluster behind.
func TestMinik8sUpFuncRunners(t *testing.T) {
	needUpPrereqs(t)
	bin := harness.Binaries(t)
	tmp, err := os.MkdirTemp("", "fr-up") // in the run dir: see TestMinik8sUpBinaries
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(tmp, "data")
	port := framework.FreePort(t)
	tokenFile := filepath.Join(tmp, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(`runner-token-1,system:funcrunner:apart,u-1,"system:funcrunners"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const (
		// Addresses of its own: TestMinik8sUpBinaries has 127.0.0.41-42
		// and 127.41.0.0/16, the in-process tests 127.0.0.10-53 and the
		// framework's 127.100-199.0.0/16.
		nodeIP      = "127.0.0.61"
		serviceCIDR = "127.61.0.0/16"
	)
	_, svcRange, _ := net.ParseCIDR(serviceCIDR)
	c := &upCluster{t: t, bin: bin, server: "http://127.0.0.1:" + strconv.Itoa(port)}
	var tasks *taskIDs
	var runners []*binProc

	t.Cleanup(func() {
		if t.Failed() {
			if c.up != nil {
				t.Logf("minik8s up's output:\n%s", c.up.logTail())
			}
			for _, r := range runners {
				t.Logf("%s's output:\n%s", r.name, r.logTail())
			}
		}
		sweepUpRun(t, tmp, tasks, nodeIP)
	})

	c.up = startBinary(t, "minik8s up", tmp, filepath.Join(tmp, "up.log"), nil, syscall.SIGINT,
		filepath.Join(bin, "minik8s"), "up", "--port", strconv.Itoa(port), "--nats-port", strconv.Itoa(framework.FreePort(t)), "--secure-port", strconv.Itoa(framework.FreePort(t)), "--data-dir", data,
		// Pods on the machine's network: the runners are what is tested,
		// and they reach pods on its loopback (TestMinik8sUpBinaries runs
		// the default, pods in their own network, inside namespaces).
		"--pod-network", "host", "--node-ip", nodeIP, "--service-cidr", serviceCIDR, "--funcrunners", "0", "--token-auth-file", tokenFile)
	t.Cleanup(func() { c.up.stop(t, 3*time.Minute) })
	tasks = watchTaskIDs(data)
	c.waitNodesReady(25*time.Minute, nodeIP) // the first run may build the image

	cl := client.New(c.server)
	// The runners are apart, as on other machines: they reach the secure
	// port with a token of the function runners' group.
	runnerKubeconfig := filepath.Join(tmp, "runner.kubeconfig")
	writeTokenKubeconfig(t, runnerKubeconfig, data, "runner-token-1")
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("up-runner-%d", i)
		r := startBinary(t, name, tmp, filepath.Join(tmp, name+".log"), nil, syscall.SIGINT,
			filepath.Join(bin, "funcrunner"), "--kubeconfig", runnerKubeconfig, "--identity", name)
		runners = append(runners, r)
		t.Cleanup(func() { r.stop(t, time.Minute) })
	}
	victim, survivor := runners[0], runners[1]
	waitRunnerLeases(c, cl, 2)

	upChain(c)

	const calls = 100
	start := time.Now()
	ids := upInvokeAll(t, c.server, "upa", calls)
	waitUpBusy(c, cl, "upa", victim.name, survivor.name)
	t.Logf("SIGKILL %s %s after the first call", victim.name, time.Since(start).Round(time.Millisecond))
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()

	waitUpChains(t, c.server, ids, killed.Add(60*time.Second), survivor)
	t.Logf("all %d calls ended %s after the SIGKILL", calls, time.Since(killed).Round(time.Millisecond))

	// Ctrl-C: the runner, then the cluster; nothing may be left.
	before := ctrlC(c, survivor, tmp, nodeIP)
	checkNothingLeft(t, tmp, "", before, tasks, port, svcRange, nodeIP)
}

// needUpPrereqs skips (or fails, under MINIK8S_E2E=1) a test of minik8s
// up on a machine that cannot run it.
func needUpPrereqs(t *testing.T) {
	t.Helper()
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
}

// upChain makes the chain upa → upb → upc → RETURN, each step sleeping
// 0.3 s, and calls it once, so that each function has a pod: cold starts
// are not what the test measures.
func upChain(c *upCluster) {
	c.t.Helper()
	names := []string{"upa", "upb", "upc"}
	for i, n := range names {
		next := "RETURN"
		if i+1 < len(names) {
			next = names[i+1]
		}
		code := fmt.Sprintf("import time\ndef run(arg):\n    time.sleep(0.3)\n    return arg + '+%s'\n", n)
		postTemplate(c.t, c.server, n, code, next)
	}
	c.waitFor(10*time.Minute, "a first call through the chain", func() (bool, string) {
		code, body, err := upPost(c.server+"/api/funcs/upa?wait=5m", "warm", 6*time.Minute)
		return err == nil && code == http.StatusOK && strings.Contains(body, `"result":"warm+upa+upb+upc"`),
			fmt.Sprintf("%d %s %v", code, body, err)
	})
}

// ctrlC stops the runner, then minik8s up, as Ctrl-C does, and returns
// the processes of the cluster before: none may be left.
func ctrlC(c *upCluster, runner *binProc, dir, nodeIP string) []harness.Proc {
	c.t.Helper()
	before := procsOf(dir, c.up.cmd.Process.Pid, runner.cmd.Process.Pid)
	pods := podProcs(nodeIP)
	if len(pods) == 0 {
		c.t.Fatalf("no pod processes while pods run: the leftover checks would prove nothing\n%v", before)
	}
	before = uniqueProcs(before, pods)
	runner.interrupt()
	if !runner.wait(time.Minute) {
		c.t.Fatal("the funcrunner still running a minute after Ctrl-C")
	}
	if _, err := runner.exited(); err != nil {
		c.t.Errorf("the funcrunner exited with %v after Ctrl-C, want status 0", err)
	}
	c.up.interrupt()
	if !c.up.wait(3 * time.Minute) {
		c.t.Fatal("minik8s up still running 3 minutes after Ctrl-C")
	}
	if _, err := c.up.exited(); err != nil {
		c.t.Errorf("minik8s up exited with %v after Ctrl-C, want status 0", err)
	}
	return before
}

// waitRunnerLeases waits until n runners hold their Lease.
func waitRunnerLeases(c *upCluster, cl *client.Client, n int) {
	c.t.Helper()
	c.waitFor(time.Minute, fmt.Sprintf("%d runners' leases", n), func() (bool, string) {
		// The runners' own leases (the schedules' Lease is not one).
		leases, _, err := cl.Leases(function.RunnerNamespace).List(context.Background(),
			client.ListOptions{LabelSelector: function.LabelComponent + "=" + function.ComponentRunner})
		if err != nil {
			return false, err.Error()
		}
		live := 0
		for _, l := range leases {
			if function.LeaseLive(l, time.Now()) {
				live++
			}
		}
		return live == n, fmt.Sprintf("%d live of %d leases", live, len(leases))
	})
}

// upInvokeAll makes n asynchronous calls of fn, ten at a time, with the
// arguments call-000, call-001…, and returns their instance ids.
func upInvokeAll(t *testing.T, server, fn string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 10)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			code, body, err := upPost(server+"/api/funcs/"+fn, fmt.Sprintf("call-%03d", i), time.Minute)
			var out struct {
				InstanceID string `json:"instanceId"`
			}
			if err != nil || code != http.StatusAccepted || json.Unmarshal([]byte(body), &out) != nil || out.InstanceID == "" {
				t.Errorf("call %d: %d %s %v", i, code, body, err) // not the test's goroutine
				return
			}
			ids[i] = out.InstanceID
		}(i)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// waitUpBusy waits until both runners drive calls of fn, victim at least
// 5 unfinished ones: killing it proves something then.
func waitUpBusy(c *upCluster, cl *client.Client, fn, victim, survivor string) {
	c.t.Helper()
	c.waitFor(30*time.Second, "both runners driving calls", func() (bool, string) {
		list, _, err := cl.FuncInstances("default").List(context.Background(), client.ListOptions{FieldSelector: "spec.function=" + fn})
		if err != nil {
			return false, err.Error()
		}
		by := map[string][]*api.FuncInstance{}
		for _, inst := range list {
			by[inst.Status.Runner] = append(by[inst.Status.Runner], inst)
		}
		ok := len(unfinished(by[victim])) >= 5 && len(by[survivor]) > 0
		return ok, fmt.Sprintf("%d by %s (%d unfinished), %d by %s, %d unclaimed",
			len(by[victim]), victim, len(unfinished(by[victim])), len(by[survivor]), survivor, len(by[""]))
	})
}

// waitUpChains waits until each call of the chain upa → upb → upc has
// ended, by deadline, and checks it Succeeded with each step recorded once.
func waitUpChains(t *testing.T, server string, ids []string, deadline time.Time, runner *binProc) {
	t.Helper()
	for i, id := range ids {
		want := fmt.Sprintf("call-%03d+upa+upb+upc", i)
		var v api.FuncInstanceView
		for {
			code, body, err := upGet(server + "/api/funcs/" + id)
			if err == nil && code == http.StatusOK && json.Unmarshal([]byte(body), &v) == nil &&
				(v.Status == api.InstanceSucceeded || v.Status == api.InstanceFailed) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("call %d (%s) not ended 60s after the SIGKILL: %d %s %v", i, id, code, body, err)
			}
			if done, err := runner.exited(); done {
				t.Fatalf("%s exited: %v", runner.name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if v.Status != api.InstanceSucceeded || string(v.Result) != want || len(v.Steps) != 3 ||
			v.Steps[0].Function != "upa" || v.Steps[1].Function != "upb" || v.Steps[2].Function != "upc" {
			t.Fatalf("call %d (%s): %+v, want Succeeded %q with the steps upa, upb, upc once each", i, id, v, want)
		}
	}
}

// checkNothingLeft checks, after Ctrl-C, what TestMinik8sUpBinaries
// checks: no process of the cluster (of before, of dir, in its pods), no
// mount under dir, no runc state or cgroup of its containers, nothing
// listening on its addresses (in the network namespace at netnsPath, or
// this one when it is empty).
func checkNothingLeft(t *testing.T, dir, netnsPath string, before []harness.Proc, tasks *taskIDs, port int, svcRange *net.IPNet, nodeIPs ...string) {
	t.Helper()
	// Shims exit once their task is deleted, a little after the answer:
	// wait (boundedly) for the processes to go before reporting them.
	var left []harness.Proc
	deadline := time.Now().Add(time.Minute)
	for {
		left = uniqueProcs(harness.StillRunning(before), procsOf(dir), podProcs(nodeIPs...))
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(left) > 0 {
		var lines []string
		for _, p := range left {
			lines = append(lines, p.String())
		}
		t.Errorf("processes of the cluster still running after Ctrl-C:\n  %s", strings.Join(lines, "\n  "))
	}
	if m := harness.MountsUnder(dir); len(m) > 0 {
		t.Errorf("mounts left under %s after Ctrl-C: %v", dir, m)
	}
	// Nor runc's state or cgroups of any container it ran: a `runc create`
	// cut short leaves a state dir with only exec.fifo and empty cgroups
	// that nobody else ever removes.
	ids := tasks.all()
	if len(ids) == 0 {
		t.Errorf("no container IDs found under %s: the runc leftover check would prove nothing", dir)
	}
	if left := runcLeftovers(ids); len(left) > 0 {
		t.Errorf("runc state or cgroups of the cluster's containers left after Ctrl-C (of %d containers):\n  %s",
			len(ids), strings.Join(left, "\n  "))
		removeRuncLeftovers(ids)
	}
	ls, err := tcpListeners(netnsPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		ip := l.IP.String()
		if svcRange.Contains(l.IP) || (ip == "127.0.0.1" && l.Port == port) {
			t.Errorf("%s still listening after Ctrl-C", l)
		}
		for _, n := range nodeIPs {
			if ip == n {
				t.Errorf("%s still listening after Ctrl-C", l)
			}
		}
	}
}

// postTemplate creates a v2 function through the reference design's
// template route, with one pod kept warm.
func postTemplate(t *testing.T, server, name, code, next string) {
	t.Helper()
	spec := map[string]any{"name": name, "function": base64.StdEncoding.EncodeToString([]byte(code)),
		"left": next, "right": next, "minInstanceNum": 1, "initInstanceNum": 1, "maxInstanceNum": 2}
	body, _ := json.Marshal(map[string]any{"apiVersion": "v2", "kind": "Func",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec})
	resp, err := http.Post(server+"/api/funcs/template", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create func %s: %d %s", name, resp.StatusCode, data)
	}
}

// upPost and upGet are plain HTTP for any goroutine: they return failures.
func upPost(url, body string, timeout time.Duration) (int, string, error) {
	hc := http.Client{Timeout: timeout}
	resp, err := hc.Post(url, "text/plain", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

func upGet(url string) (int, string, error) {
	hc := http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// writeTokenKubeconfig writes a kubeconfig for the secure port of the
// cluster in data (its URL and CA from the admin kubeconfig) with token.
func writeTokenKubeconfig(t *testing.T, path, data, token string) {
	t.Helper()
	admin, err := client.LoadKubeconfig(filepath.Join(data, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.WriteKubeconfig(path, "runner", client.Config{Server: admin.Server, CAData: admin.CAData, Token: token}); err != nil {
		t.Fatal(err)
	}
}
