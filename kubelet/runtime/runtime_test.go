package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/kubelet/runtime"
	"minik8s/test/framework"
)

func waitExited(t *testing.T, rt *runtime.Runtime, id string) runtime.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := rt.ContainerStatus(context.Background(), id)
		if err != nil {
			t.Fatalf("status of %s: %v", id, err)
		}
		if st.State == runtime.StateExited {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not exit: %+v", id, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRuntimeContainerLifecycle(t *testing.T) {
	ctd := framework.StartContainerd(t)
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
	spec := runtime.ContainerSpec{
		ID:      "lifecycle-1",
		Image:   framework.PythonRuntimeImage,
		Labels:  map[string]string{runtime.LabelNode: "n1", runtime.LabelPodUID: "u1"},
		Command: []string{"python3", "-c"},
		Args: []string{`import os, sys
print("hello", os.environ["GREETING"], os.getcwd())
print(open("/data/in.txt").read())
sys.exit(3)`},
		Env:        []string{"GREETING=world"},
		WorkingDir: "/tmp",
		Mounts:     []runtime.Mount{{Source: mount, Destination: "/data", ReadOnly: true}},
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
	out, _ := os.ReadFile(logPath)
	for _, want := range []string{"hello world /tmp", "from the host"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	cs, err := rt.ListContainers(ctx, map[string]string{runtime.LabelNode: "n1"})
	if err != nil || len(cs) != 1 || cs[0].ID != spec.ID {
		t.Fatalf("ListContainers(node n1) = %v, %v", cs, err)
	}
	if cs, _ := rt.ListContainers(ctx, map[string]string{runtime.LabelNode: "n2"}); len(cs) != 0 {
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
	ctd := framework.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx := context.Background()
	logPath := filepath.Join(t.TempDir(), "c.log")
	spec := runtime.ContainerSpec{
		ID:    "stubborn",
		Image: framework.PythonRuntimeImage,
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
	if out, _ := os.ReadFile(logPath); !strings.Contains(string(out), "ignoring TERM") {
		t.Errorf("SIGTERM was not sent first: %q", out)
	}
}

func TestRuntimeMemoryLimitOOMKill(t *testing.T) {
	ctd := framework.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan runtime.Event, 16)
	go rt.Events(ctx, func(e runtime.Event) { events <- e })
	logPath := filepath.Join(t.TempDir(), "c.log")
	spec := runtime.ContainerSpec{
		ID:          "hog",
		Image:       framework.PythonRuntimeImage,
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
	sawExit := false
	timeout := time.After(10 * time.Second)
	for !sawExit {
		select {
		case e := <-events:
			sawExit = e.Kind == runtime.EventExit && e.ContainerID == spec.ID
		case <-timeout:
			t.Fatalf("no exit event for %s", spec.ID)
		}
	}
}
