package test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"minik8s/images"
	"minik8s/mkctl"
	"minik8s/pkg/api"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

func mk(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := mkctl.RunWithInput(ctx, args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMkctlImageAndLogs(t *testing.T) {
	t.Parallel()
	ctd := containerdtest.StartContainerd(t)
	// Build (or take from the cache) the archive and import it with mkctl.
	ctx := context.Background()
	b := images.Builder{}
	path, err := b.Build(ctx, images.PythonRuntime())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mk(t, "image", "import", "--containerd-address", ctd.Address, path)
	if code != 0 || !strings.Contains(out, "imported docker.io/minik8s/python-runtime:latest") {
		t.Fatalf("image import: %d %q %q", code, out, errOut)
	}
	code, out, errOut = mk(t, "image", "ls", "--containerd-address", ctd.Address)
	if code != 0 || !strings.Contains(out, "docker.io/minik8s/python-runtime:latest") || !strings.Contains(out, "NAME") {
		t.Fatalf("image ls: %d %q %q", code, out, errOut)
	}
	code, _, errOut = mk(t, "image", "ls", "--containerd-address", ctd.Dir+"/missing.sock")
	if code == 0 || !strings.Contains(errOut, "missing.sock") {
		t.Errorf("image ls on a missing socket: %d %q", code, errOut)
	}

	as := framework.StartAPIServer(t)
	framework.StartKubelet(t, as.URL, ctd, "node-m", "127.0.0.20")
	p := pythonPod("talker", "node-m", "import time\nfor i in range(3):\n    print('talk', i, flush=True)\n    time.sleep(1)\n")
	p.Spec.RestartPolicy = api.RestartPolicyNever
	if _, err := as.Client.Pods("default").Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitPod(t, as.Client, "talker", 60*time.Second, "Running", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodRunning || p.Status.Phase == api.PodSucceeded
	})
	code, out, errOut = mk(t, "--server", as.URL, "logs", "talker", "-f")
	if code != 0 || !strings.Contains(out, "talk 2") {
		t.Errorf("logs -f: %d %q %q", code, out, errOut)
	}
	code, out, _ = mk(t, "--server", as.URL, "logs", "talker", "-c", "main")
	if code != 0 || out != "talk 0\ntalk 1\ntalk 2\n" {
		t.Errorf("logs -c main: %d %q", code, out)
	}
	code, _, errOut = mk(t, "--server", as.URL, "logs", "nobody")
	if code == 0 || !strings.Contains(errOut, "NotFound") {
		t.Errorf("logs of a missing pod: %d %q", code, errOut)
	}

	// The real kubectl reads the same log: -f, -c, --tail.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "talker", "-f"}, "talk 0\ntalk 1\ntalk 2\n"},
		{[]string{"logs", "talker", "-c", "main"}, "talk 0\ntalk 1\ntalk 2\n"},
		{[]string{"logs", "talker", "--tail=2"}, "talk 1\ntalk 2\n"},
	} {
		if out, errOut, err := kubectl(t, as, tc.args...); err != nil || out != tc.want {
			t.Errorf("kubectl %s: %v %q %s, want %q", strings.Join(tc.args, " "), err, out, errOut, tc.want)
		}
	}
	// Each line is kept with its time (the container logger): --since,
	// --since-time and --timestamps.
	if out, errOut, err := kubectl(t, as, "logs", "talker", "--since=1h"); err != nil || out != "talk 0\ntalk 1\ntalk 2\n" {
		t.Errorf("kubectl logs --since=1h: %v %q %q", err, out, errOut)
	}
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if out, errOut, err := kubectl(t, as, "logs", "talker", "--since-time="+later); err != nil || out != "" {
		t.Errorf("kubectl logs --since-time in an hour: %v %q %q", err, out, errOut)
	}
	out, errOut, err = kubectl(t, as, "logs", "talker", "--timestamps", "--tail=2")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if err != nil || len(lines) != 2 {
		t.Fatalf("kubectl logs --timestamps --tail=2: %v %q %q", err, out, errOut)
	}
	var times []time.Time
	for i, l := range lines {
		ts, text, _ := strings.Cut(l, " ")
		at, perr := time.Parse(time.RFC3339Nano, ts)
		if perr != nil || time.Since(at) > 5*time.Minute || text != fmt.Sprintf("talk %d", i+1) {
			t.Errorf("kubectl logs --timestamps line %q: %v", l, perr)
		}
		times = append(times, at)
	}
	if len(times) == 2 && times[1].Sub(times[0]) < 500*time.Millisecond {
		t.Errorf("the lines printed 1 s apart are stamped %v and %v", times[0], times[1])
	}
	// A restarted container's output is one log with its previous run's:
	// said, not ignored.
	if out, errOut, err := kubectl(t, as, "logs", "talker", "--previous"); err == nil || !strings.Contains(errOut, "previous") {
		t.Errorf("kubectl logs --previous: %v %q %q", err, out, errOut)
	}
}
