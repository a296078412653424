package containerd_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/netns"
	"minik8s/test/containerdtest"
	"minik8s/test/harness"
)

func waitExited(t *testing.T, rt *containerd.Runtime, id string) containerd.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := rt.ContainerStatus(context.Background(), id)
		if err != nil {
			t.Fatalf("status of %s: %v", id, err)
		}
		if st.State == containerd.StateExited {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not exit: %+v", id, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRuntimeContainerLifecycle(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx := context.Background()
	dir := t.TempDir()
	mount := filepath.Join(dir, "vol")
	if err := os.MkdirAll(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mount, "in.txt"), []byte("from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "logs", "c.log")
	spec := containerd.ContainerSpec{
		ID:      "lifecycle-1",
		Image:   containerdtest.PythonRuntimeImage,
		Labels:  map[string]string{containerd.LabelNode: "n1", containerd.LabelPodUID: "u1"},
		Command: []string{"python3", "-c"},
		Args: []string{`import os, sys
print("hello", os.environ["GREETING"], os.getcwd())
print(open("/data/in.txt").read())
sys.exit(3)`},
		Env:        []string{"GREETING=world"},
		WorkingDir: "/tmp",
		Mounts:     []containerd.Mount{{Source: mount, Destination: "/data", ReadOnly: true}},
		LogPath:    logPath,
	}
	if err := rt.CreateContainer(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, spec.ID, logPath); err != nil {
		t.Fatal(err)
	}
	st := waitExited(t, rt, spec.ID)
	if st.ExitCode != 3 || st.OOMKilled {
		t.Errorf("exit = %d, oom %v; want 3, false", st.ExitCode, st.OOMKilled)
	}
	// Reaped, the task is gone, the exit is kept and the log is complete
	// (the shim may still be copying the last output when the exit is seen).
	if err := rt.ReapContainer(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	if again, err := rt.ContainerStatus(ctx, spec.ID); err != nil || again.State != containerd.StateExited ||
		again.ExitCode != 3 || !again.ExitedAt.Equal(st.ExitedAt) || again.OOMKilled || again.Pid != 0 {
		t.Errorf("status after reaping: %+v, %v (before: %+v)", again, err, st)
	}
	if err := rt.ReapContainer(ctx, spec.ID); err != nil {
		t.Errorf("reaping again: %v", err)
	}
	out, _ := os.ReadFile(logPath)
	for _, want := range []string{"hello world /tmp", "from the host"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	cs, err := rt.ListContainers(ctx, map[string]string{containerd.LabelNode: "n1"})
	if err != nil || len(cs) != 1 || cs[0].ID != spec.ID {
		t.Fatalf("ListContainers(node n1) = %v, %v", cs, err)
	}
	if cs, _ := rt.ListContainers(ctx, map[string]string{containerd.LabelNode: "n2"}); len(cs) != 0 {
		t.Errorf("ListContainers(node n2) = %v, want none", cs)
	}
	if err := rt.RemoveContainer(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ContainerStatus(ctx, spec.ID); err == nil {
		t.Errorf("container still there after remove")
	}
	if ok, err := rt.SnapshotExists(ctx, spec.ID); err != nil || ok {
		t.Errorf("snapshot after remove: %v, %v", ok, err)
	}
}

func TestRuntimeStopEscalatesToSIGKILL(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx := context.Background()
	logPath := filepath.Join(t.TempDir(), "c.log")
	spec := containerd.ContainerSpec{
		ID:    "stubborn",
		Image: containerdtest.PythonRuntimeImage,
		Command: []string{"python3", "-c", `import signal, time
signal.signal(signal.SIGTERM, lambda *a: print("ignoring TERM", flush=True))
print("ready", flush=True)
while True: time.sleep(1)`},
		LogPath: logPath,
	}
	if err := rt.CreateContainer(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, spec.ID, logPath); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := os.ReadFile(logPath)
		if strings.Contains(string(out), "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("container did not start: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := rt.StopContainer(ctx, spec.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	st := waitExited(t, rt, spec.ID)
	if st.ExitCode != 137 {
		t.Errorf("exit code = %d, want 137 (SIGKILL)", st.ExitCode)
	}
	waitLog(t, logPath, "ignoring TERM") // SIGTERM came first
}

func TestRuntimeMemoryLimitOOMKill(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan containerd.Event, 16)
	go rt.Events(ctx, func(e containerd.Event) { events <- e })
	logPath := filepath.Join(t.TempDir(), "c.log")
	spec := containerd.ContainerSpec{
		ID:          "hog",
		Image:       containerdtest.PythonRuntimeImage,
		Command:     []string{"python3", "-c", "x = bytearray(512 * 1024 * 1024); print(len(x))"},
		MemoryLimit: 64 << 20,
		LogPath:     logPath,
	}
	if err := rt.CreateContainer(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, spec.ID, logPath); err != nil {
		t.Fatal(err)
	}
	st := waitExited(t, rt, spec.ID)
	if st.ExitCode != 137 || !st.OOMKilled {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("exit %d, oomKilled %v; want 137, true (log %q)", st.ExitCode, st.OOMKilled, out)
	}
	// The task and its cgroup go with the reaping; the OOM kill is kept.
	if err := rt.ReapContainer(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	if st, err := rt.ContainerStatus(ctx, spec.ID); err != nil || st.State != containerd.StateExited || st.ExitCode != 137 || !st.OOMKilled {
		t.Errorf("status after reaping: %+v, %v", st, err)
	}
	sawExit := false
	timeout := time.After(10 * time.Second)
	for !sawExit {
		select {
		case e := <-events:
			sawExit = e.Kind == containerd.EventExit && e.ContainerID == spec.ID
		case <-timeout:
			t.Fatalf("no exit event for %s", spec.ID)
		}
	}
}

// TestContainersJoinANetworkNamespace: a container given a namespace sees
// its devices (here only lo), not the node's, and two containers in one
// namespace talk over its localhost.
func TestContainersJoinANetworkNamespace(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx := context.Background()
	dir := t.TempDir()
	ns := filepath.Join(dir, "netns")
	if err := netns.New(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netns.Remove(ns) })
	// CNI's loopback plugin does this for a pod.
	if out, err := exec.Command("nsenter", "--net="+ns, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	run := func(id, code string) string {
		t.Helper()
		logPath := filepath.Join(dir, id+".log")
		spec := containerd.ContainerSpec{ID: id, Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", code},
			LogPath: logPath, NetNSPath: ns}
		if err := rt.CreateContainer(ctx, spec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.RemoveContainer(context.Background(), id) })
		if err := rt.StartContainer(ctx, id, logPath); err != nil {
			t.Fatal(err)
		}
		return logPath
	}
	// A server on the namespace's localhost, then a client beside it.
	server := run("netns-server", `import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7000)); s.listen(1)
print("devices", sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]), flush=True)
c, _ = s.accept(); print("got", c.recv(100).decode(), flush=True)`)
	waitLog(t, server, "devices")
	client := run("netns-client", `import socket
c = socket.create_connection(("127.0.0.1", 7000)); c.sendall(b"hello over the pod's localhost")`)
	waitExited(t, rt, "netns-client")
	waitExited(t, rt, "netns-server")
	waitLog(t, server, "got hello over the pod's localhost")
	if out, _ := os.ReadFile(server); !strings.Contains(string(out), "devices ['lo']") {
		t.Errorf("server log %q (client log at %s)", out, client)
	}
}

func waitLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if data, _ := os.ReadFile(path); strings.Contains(string(data), want) {
			return
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(path)
			t.Fatalf("%s lacks %q after 60s: %s", path, want, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExecInAContainer: a command runs in a running container, with its
// environment, and gives back its exit code and output; one that outlives
// its context is killed.
func TestExecInAContainer(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx := context.Background()
	logPath := filepath.Join(t.TempDir(), "c.log")
	spec := containerd.ContainerSpec{ID: "exec-target", Image: containerdtest.PythonRuntimeImage, Command: []string{"sleep", "300"},
		Env: []string{"GREETING=hello from the container"}, LogPath: logPath}
	if err := rt.CreateContainer(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveContainer(context.Background(), "exec-target") })
	if err := rt.StartContainer(ctx, "exec-target", logPath); err != nil {
		t.Fatal(err)
	}
	code, out, err := rt.Exec(ctx, "exec-target", []string{"python3", "-c", "import os, sys; print(os.environ['GREETING']); sys.exit(4)"})
	if err != nil || code != 4 || strings.TrimSpace(out) != "hello from the container" {
		t.Fatalf("exec: code %d, output %q, err %v", code, out, err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, _, err := rt.Exec(short, "exec-target", []string{"sleep", "60"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exec past its deadline: %v", err)
	}
	if st, err := rt.ContainerStatus(ctx, "exec-target"); err != nil || st.State != containerd.StateRunning {
		t.Fatalf("the container after the execs: %+v, %v", st, err)
	}
	if err := rt.ReapContainer(ctx, "exec-target"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("reaping a running container: %v, want a conflict", err)
	}
}

// TestReapWithTheLogger: with the container logger (a binary the shim runs
// beside the container), everything the container wrote is in the log,
// each line with its time, once the reaping returns.
func TestReapWithTheLogger(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	ctx := context.Background()
	rt, err := containerd.New(ctx, ctd.Address, containerd.Options{Logger: harness.GoBinary(t, "minik8s-logger")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	logPath := filepath.Join(t.TempDir(), "c.log")
	spec := containerd.ContainerSpec{ID: "chatty", Image: containerdtest.PythonRuntimeImage, LogPath: logPath,
		Command: []string{"python3", "-c", "import sys\nfor i in range(2000): print('line', i)\nsys.stdout.write('no end')"}}
	if err := rt.CreateContainer(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveContainer(context.Background(), spec.ID) })
	if err := rt.StartContainer(ctx, spec.ID, logPath); err != nil {
		t.Fatal(err)
	}
	waitExited(t, rt, spec.ID)
	start := time.Now()
	if err := rt.ReapContainer(ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	t.Logf("reaped in %s", time.Since(start).Round(time.Millisecond))
	data, _ := os.ReadFile(logPath)
	records := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(records) != 2001 || !strings.HasSuffix(records[1999], " stdout F line 1999") || !strings.HasSuffix(records[2000], " stdout P no end") {
		t.Fatalf("%d records, the last %q", len(records), records[len(records)-1])
	}
}
