package framework

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/pkg/containerd"

	"minik8s/test/containerdtest"
	"minik8s/test/harness"
)

// childInfo is what the helper test tells its parent once its containerd
// runs a container.
type childInfo struct {
	RunDir, Dir, Address string
	DaemonPid            int
	DaemonStart          uint64
	ContainerPid         int
	ContainerStart       uint64
	Netns                []string
}

// TestHarnessChild is run by TestHarnessEndsClean in a child test binary:
// it starts containerd with a running container, says so, and waits to be
// ended (or ends normally when asked to).
func TestHarnessChild(t *testing.T) {
	ready := os.Getenv("MINIK8S_HARNESS_CHILD")
	if ready == "" {
		t.Skip("helper of TestHarnessEndsClean")
	}
	u := StartUnderlay(t, 2)
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	ctx := context.Background()
	if err := ctd.Runtime.CreateContainer(ctx, containerd.ContainerSpec{
		ID: "sleeper", Image: containerdtest.PythonRuntimeImage,
		Command: []string{"python3", "-c", "import time; time.sleep(3600)"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := ctd.Runtime.StartContainer(ctx, "sleeper", filepath.Join(t.TempDir(), "sleeper.log")); err != nil {
		t.Fatal(err)
	}
	st, err := ctd.Runtime.ContainerStatus(ctx, "sleeper")
	if err != nil || st.State != containerd.StateRunning {
		t.Fatalf("container: %+v, %v", st, err)
	}
	info := childInfo{RunDir: harness.RunDir(), Dir: ctd.Dir, Address: ctd.Address,
		DaemonPid: ctd.DaemonPid(), DaemonStart: harness.ProcStart(ctd.DaemonPid()),
		ContainerPid: int(st.Pid), ContainerStart: harness.ProcStart(int(st.Pid)), Netns: u.Namespaces()}
	data, _ := json.Marshal(info)
	if err := os.WriteFile(ready+".tmp", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ready+".tmp", ready); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("MINIK8S_HARNESS_END") == "normal" {
		return
	}
	time.Sleep(time.Hour)
}

// TestHarnessEndsClean ends a test binary that runs containerd and a
// container in every way a binary ends, and checks that nothing of it
// remains: no containerd, shim, container process, runc container, mount,
// network namespace or run dir.
func TestHarnessEndsClean(t *testing.T) {
	if os.Geteuid() != 0 {
		harness.NeedE2E(t, "containerd tests need root")
	}
	for _, tc := range []struct {
		name    string
		timeout string
		end     func(p *os.Process) error
		code    int
		output  string
	}{
		{name: "normal", timeout: "10m", code: 0},
		{name: "SIGINT", timeout: "10m", end: func(p *os.Process) error { return p.Signal(syscall.SIGINT) }, code: 1, output: "got interrupt: tearing down"},
		{name: "SIGTERM", timeout: "10m", end: func(p *os.Process) error { return p.Signal(syscall.SIGTERM) }, code: 1, output: "got terminated: tearing down"},
		// Long enough for the child to import the image and start its
		// container first (the parent checks it did).
		{name: "timeout", timeout: "60s", code: 2, output: "panic: test timed out after 1m0s"},
		// Nothing runs in the child: Pdeathsig takes containerd, the next
		// binary's sweep (here, the parent's) the rest.
		{name: "SIGKILL", timeout: "10m", end: func(p *os.Process) error { return p.Kill() }, code: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			ready := filepath.Join(tmp, "ready.json")
			logPath := filepath.Join(tmp, "child.log")
			logf, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHarnessChild$", "-test.v", "-test.timeout="+tc.timeout)
			cmd.Env = append(os.Environ(), "MINIK8S_HARNESS_CHILD="+ready, "MINIK8S_HARNESS_END="+tc.name)
			cmd.Stdout, cmd.Stderr = logf, logf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				exited <- nil
				harness.SweepStale()
			})
			output := func() string { data, _ := os.ReadFile(logPath); return string(data) }

			var info childInfo
			deadline := time.Now().Add(10 * time.Minute)
			for {
				data, err := os.ReadFile(ready)
				if err == nil {
					if err := json.Unmarshal(data, &info); err != nil {
						t.Fatal(err)
					}
					break
				}
				select {
				case err := <-exited:
					exited <- err
					if tc.name != "normal" {
						t.Fatalf("child ended before its container ran: %v\n%s", err, output())
					}
				case <-time.After(100 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("child not ready after 10 minutes\n%s", output())
				}
			}
			// The premise: a daemon, a shim and a container are running.
			if tc.name != "normal" {
				if !harness.Alive(info.DaemonPid, info.DaemonStart) || !harness.Alive(info.ContainerPid, info.ContainerStart) {
					t.Fatalf("child's containerd (%d) or container (%d) not running", info.DaemonPid, info.ContainerPid)
				}
				var shims int
				for _, p := range harness.ProcsReferring(info.Dir) {
					if strings.Contains(p.Cmdline, "containerd-shim") {
						shims++
					}
				}
				if shims == 0 {
					t.Fatalf("no shim runs on %s", info.Address)
				}
			}
			if tc.end != nil {
				if err := tc.end(cmd.Process); err != nil {
					t.Fatal(err)
				}
			}
			var werr error
			select {
			case werr = <-exited:
				exited <- werr
			case <-time.After(3 * time.Minute):
				t.Fatalf("child did not end within 3 minutes\n%s", output())
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				code = ee.ExitCode()
			} else if werr != nil {
				t.Fatal(werr)
			}
			if code != tc.code {
				t.Errorf("child exited with %d, want %d\n%s", code, tc.code, output())
			}
			if tc.output != "" && !strings.Contains(output(), tc.output) {
				t.Errorf("child's output lacks %q\n%s", tc.output, output())
			}
			if tc.name == "SIGKILL" {
				// Pdeathsig: the kernel kills containerd with its binary.
				for i := 0; harness.Alive(info.DaemonPid, info.DaemonStart); i++ {
					if i == 100 {
						t.Errorf("containerd %d outlived its SIGKILLed test binary by 10s", info.DaemonPid)
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if _, err := os.Stat(info.RunDir); err != nil {
					t.Fatalf("the killed child's run dir is gone before any sweep: %v", err)
				}
				harness.SweepStale()
			}

			if harness.Alive(info.DaemonPid, info.DaemonStart) {
				t.Errorf("containerd %d still runs", info.DaemonPid)
			}
			if harness.Alive(info.ContainerPid, info.ContainerStart) {
				t.Errorf("container process %d still runs", info.ContainerPid)
			}
			for _, p := range harness.ProcsReferring(info.RunDir) {
				t.Errorf("process %d still runs on the child's run dir: %s", p.PID, p.Cmdline)
			}
			if m := harness.MountsUnder(info.RunDir); len(m) > 0 {
				t.Errorf("mounts left: %v", m)
			}
			if found, _ := harness.SweepRuncContainers(info.RunDir); len(found) > 0 {
				t.Errorf("runc containers left: %v", found)
			}
			if len(info.Netns) == 0 {
				t.Errorf("the child made no network namespaces")
			}
			for _, n := range info.Netns {
				if _, err := os.Stat(filepath.Join(harness.NetnsDir, n)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("network namespace %s is left (%v)", n, err)
				}
			}
			if _, err := os.Stat(info.RunDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the child's run dir %s is still there (%v)", info.RunDir, err)
			}
		})
	}
}
