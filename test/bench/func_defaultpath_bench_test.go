package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/pkg/subprocess"
	"minik8s/test/framework"
	"minik8s/test/harness"
)

// BenchmarkFuncWarmCallDefaultPath is BenchmarkFuncWarmCall on the data
// path users run (issue 28, part 4): `minik8s up` as the README starts it
// (pods on their own network, Services in the kernel), each cluster in a
// network namespace of the benchmark's own, the callers in it too, so that
// no userspace forwarder sits on any measured path. Two clusters in turn:
// one as `minik8s up` runs (the runner in its process), one with
// `--funcrunners 0` and two bin/funcrunner processes. On each, a warm
// function is called at its Service's cluster IP, at its pod's IP, and
// synchronously through the apiserver: one caller (latency), then 16
// (throughput). The ratios are the apiserver's against the Service's.
func BenchmarkFuncWarmCallDefaultPath(b *testing.B) {
	u := framework.StartUnderlay(b, 2)
	bin := harness.Binaries(b)
	b.StopTimer()
	// One cluster at a time: the other's background work (probes, status,
	// leases) stays off the figures.
	for i, runners := range []int{0, 2} {
		c := startUp(b, bin, u.Nodes[i], runners)
		service, pod := c.warmFunc(b, "echo", echoCode)
		targets := []struct{ name, url string }{
			{c.name + "-service", service}, {c.name + "-pod", pod},
			{c.name + "-api", c.server + "/api/funcs/echo?wait=60s"}}
		call := func(url string) error {
			_, err := tryPostWith(c.hc, url, "hello", http.StatusOK)
			return err
		}
		for _, tg := range targets {
			if err := call(tg.url); err != nil {
				b.Fatalf("%s: %v", tg.name, err)
			}
		}
		b.StartTimer()
		// Latency: the three in turn, call by call, so that whatever the
		// machine does meanwhile falls on each alike.
		lat := make([][]time.Duration, len(targets))
		for range b.N {
			for k, tg := range targets {
				t0 := time.Now()
				if err := call(tg.url); err != nil {
					b.Fatalf("%s: %v", tg.name, err)
				}
				lat[k] = append(lat[k], time.Since(t0))
			}
		}
		perSec := make([]float64, len(targets))
		for k, tg := range targets {
			b.ReportMetric(percentile(lat[k], 50), tg.name+"-p50-ms")
			b.ReportMetric(percentile(lat[k], 99), tg.name+"-p99-ms")
			clat, ps, errs, first := concurrently(b.N, callers, func(int) error { return call(tg.url) })
			if errs > 0 {
				b.Fatalf("%s: %d of %d concurrent calls failed, first: %v", tg.name, errs, b.N, first)
			}
			b.ReportMetric(percentile(clat, 50), tg.name+"-c16-p50-ms")
			b.ReportMetric(ps, tg.name+"-c16-calls/s")
			perSec[k] = ps
		}
		b.StopTimer()
		b.ReportMetric(percentile(lat[2], 50)/percentile(lat[0], 50), c.name+"-p50-ratio")
		b.ReportMetric(perSec[2]/perSec[0], c.name+"-c16-throughput-share")
		c.stop()
	}
	b.ReportMetric(float64(dials.Load()), "dials")
}

// dials counts the callers' connections: each is made on a thread moved
// into the namespace, so the figures hold only while connections are
// reused (a few dials, not one per call).
var dials atomic.Int64

// upNode is `minik8s up` run in a network namespace, reached from there.
type upNode struct {
	name   string
	node   *framework.NetNode
	data   string
	server string       // the local port, in the namespace
	hc     *http.Client // dials from the namespace
	admin  *client.Client
	stop   func() // Ctrl-C, once
	// runners stop the cluster's bin/funcrunner processes.
	runners []func(grace time.Duration)
}

// startUp runs `minik8s up` with the README's defaults in node's
// namespace and waits for its node to be ready. With runners > 0 it runs
// with --funcrunners 0 and that many bin/funcrunner beside it instead.
func startUp(b *testing.B, bin string, node *framework.NetNode, runners int) *upNode {
	b.Helper()
	name := "local"
	if runners > 0 {
		name = "runners"
	}
	// In the run dir (harness.Main sweeps what a killed binary leaves),
	// short: the containerd socket lives under it.
	tmp, err := os.MkdirTemp("", "up")
	if err != nil {
		b.Fatal(err)
	}
	c := &upNode{name: name, node: node, data: filepath.Join(tmp, "data"), server: "http://127.0.0.1:8080",
		hc: &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return node.DialContext(ctx, network, addr)
		},
			MaxIdleConnsPerHost: 64}}}
	args := []string{"--net=" + node.Path(), filepath.Join(bin, "minik8s"), "up", "--data-dir", c.data, "--node-ip", node.IP}
	if runners > 0 {
		// The runners' token: function runners of system:funcrunners.
		tokens := filepath.Join(tmp, "tokens.csv")
		if err := os.WriteFile(tokens, []byte(`runner-token,system:funcrunner:bench,u-1,"system:funcrunners"`+"\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		args = append(args, "--funcrunners", "0", "--token-auth-file", tokens)
	}
	stop := startNamespaced(b, "minik8s up ("+name+")", filepath.Join(tmp, "up.log"), args...)
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			for _, r := range c.runners {
				r(time.Minute)
			}
			stop(3 * time.Minute)
			_ = os.RemoveAll(tmp)
		})
	}
	b.Cleanup(c.stop)
	// The admin's client, for the setup only: through a forwarder.
	c.admin = client.New("http://" + node.Expose(b, "127.0.0.1:8080"))
	waitBench(b, 25*time.Minute, "minik8s up's node ready", func() bool { // the first run may build the image
		nodes, _, err := c.admin.Nodes().List(context.Background(), client.ListOptions{})
		if err != nil || len(nodes) == 0 {
			return false
		}
		for _, cond := range nodes[0].Status.Conditions {
			if cond.Type == api.NodeReady && cond.Status == api.ConditionTrue {
				return true
			}
		}
		return false
	})
	if runners > 0 {
		c.startRunners(b, bin, runners)
	}
	return c
}

// startRunners runs n bin/funcrunner in the cluster's namespace, on the
// secure port with the runners' token, and waits for their Leases.
func (c *upNode) startRunners(b *testing.B, bin string, n int) {
	b.Helper()
	admin, err := client.LoadKubeconfig(filepath.Join(c.data, "admin.kubeconfig"))
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(filepath.Dir(c.data), "runner.kubeconfig")
	if err := client.WriteKubeconfig(kubeconfig, "runner", client.Config{Server: admin.Server, CAData: admin.CAData, Token: "runner-token"}); err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("bench-runner-%d", i)
		stop := startNamespaced(b, name, filepath.Join(filepath.Dir(c.data), name+".log"),
			"--net="+c.node.Path(), filepath.Join(bin, "funcrunner"), "--kubeconfig", kubeconfig, "--identity", name)
		c.runners = append(c.runners, stop)
	}
	waitBench(b, time.Minute, strconv.Itoa(n)+" runners' Leases", func() bool {
		leases, _, err := c.admin.Leases(function.RunnerNamespace).List(context.Background(),
			client.ListOptions{LabelSelector: function.LabelComponent + "=" + function.ComponentRunner})
		live := 0
		for _, l := range leases {
			if function.LeaseLive(l, time.Now()) {
				live++
			}
		}
		return err == nil && live == n
	})
}

// warmFunc creates a v2 function with one pod kept, waits for the pod to
// serve, and returns the function's URLs at its Service's cluster IP and
// at its pod's IP.
func (c *upNode) warmFunc(b *testing.B, name, code string) (service, pod string) {
	b.Helper()
	ctx := context.Background()
	one := 1
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.FuncSpec{Name: name, Function: base64.StdEncoding.EncodeToString([]byte(code)), Left: api.FuncReturn,
			MinInstanceNum: &one, InitInstanceNum: &one}}
	if _, err := c.admin.Funcs("default").Create(ctx, f); err != nil {
		b.Fatal(err)
	}
	waitBench(b, 3*time.Minute, "the function's pod in its Endpoints", func() bool {
		ep, err := c.admin.Endpoints("default").Get(ctx, function.ObjectName(name))
		if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || len(ep.Subsets[0].Ports) == 0 {
			return false
		}
		addr, port := ep.Subsets[0].Addresses[0], ep.Subsets[0].Ports[0].Port
		if addr.Port != 0 { // the port the kubelet allocated to this pod
			port = addr.Port
		}
		pod = fmt.Sprintf("http://%s:%d%s", addr.IP, port, function.InvokePath)
		return true
	})
	svc, err := c.admin.Services("default").Get(ctx, function.ObjectName(name))
	if err != nil {
		b.Fatal(err)
	}
	service = fmt.Sprintf("http://%s:%d%s", svc.Spec.ClusterIP, function.ServicePort, function.InvokePath)
	return service, pod
}

// startNamespaced runs `nsenter args…` (which execs the program in the
// namespace, so signals reach it) writing to logPath, and returns what
// stops it: SIGINT, as Ctrl-C, then SIGKILL after grace. SIGINT reaches it
// too if this binary dies first.
func startNamespaced(b *testing.B, what, logPath string, args ...string) (stop func(grace time.Duration)) {
	b.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("nsenter", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
	wait, err := subprocess.Start(cmd)
	if err != nil {
		logf.Close()
		b.Fatalf("starting %s: %v", what, err)
	}
	done := make(chan struct{})
	go func() {
		_ = wait()
		logf.Close()
		close(done)
	}()
	return func(grace time.Duration) {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(grace):
			b.Errorf("%s did not stop within %v of SIGINT: killing it (log %s)", what, grace, logPath)
			_ = cmd.Process.Kill()
			<-done
		}
	}
}
