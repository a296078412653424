package test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
	"minik8s/test/harness"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// TestKubectlExec: the real kubectl exec (the websocket channel protocol,
// v5) runs commands in a pod's container through the apiserver and the
// kubelet on real containerd: output on stdout and stderr apart, the exit
// code passed on, stdin to its end.
func TestKubectlExec(t *testing.T) {
	t.Parallel()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	as := framework.StartAPIServer(t)
	framework.StartKubelet(t, as.URL, ctd, "node-x", "127.0.0.27")
	ctx := context.Background()
	if _, err := as.Client.Pods("default").Create(ctx, pythonPod("sleeper", "node-x", "import time\ntime.sleep(600)\n")); err != nil {
		t.Fatal(err)
	}
	waitPod(t, as.Client, "sleeper", 60*time.Second, "Running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })

	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command("kubectl", append([]string{"--server", as.URL}, args...)...)
		home := filepath.Join(t.TempDir(), "home")
		cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
		var out, errOut bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			return out.String(), errOut.String(), exit.ExitCode()
		case err != nil:
			harness.NeedE2E(t, "kubectl: %v", err)
		}
		return out.String(), errOut.String(), 0
	}
	if out, errOut, code := run("", "exec", "sleeper", "--", "echo", "hello"); code != 0 || out != "hello\n" {
		t.Errorf("kubectl exec -- echo hello: %d %q %q", code, out, errOut)
	}
	out, errOut, code := run("", "exec", "sleeper", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if code != 3 || out != "out\n" || !strings.Contains(errOut, "err\n") || !strings.Contains(errOut, "exit code 3") {
		t.Errorf("kubectl exec of a failing command: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run("piped\nin\n", "exec", "-i", "sleeper", "--", "python3", "-c", "import sys; print(sys.stdin.read().upper(), end='')"); code != 0 || out != "PIPED\nIN\n" {
		t.Errorf("kubectl exec -i with stdin: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := run("", "exec", "sleeper", "-c", "nope", "--", "true"); code == 0 || !strings.Contains(errOut, `no container "nope"`) {
		t.Errorf("kubectl exec in a missing container: %d %q", code, errOut)
	}

	// kubectl port-forward: SPDY streams through the apiserver to the
	// kubelet, which connects to the pod's port.
	web := pythonPod("web", "node-x", "import http.server\n"+
		"class H(http.server.BaseHTTPRequestHandler):\n"+
		"    def do_GET(self):\n"+
		"        self.send_response(200); self.end_headers(); self.wfile.write(b'forwarded ' + self.path.encode())\n"+
		"http.server.HTTPServer(('127.0.0.27', 18099), H).serve_forever()\n")
	if _, err := as.Client.Pods("default").Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	waitPod(t, as.Client, "web", 60*time.Second, "Running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })
	pfCtx, stopPF := context.WithCancel(ctx)
	defer stopPF()
	pf := exec.CommandContext(pfCtx, "kubectl", "--server", as.URL, "port-forward", "pod/web", ":18099")
	pf.Env = append(os.Environ(), "HOME="+t.TempDir())
	var pfOut syncBuffer
	pf.Stdout, pf.Stderr = &pfOut, &pfOut
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	local := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 18099`)
	var body string
	waitUntil(t, 20*time.Second, "a request through kubectl port-forward", func() bool {
		m := local.FindStringSubmatch(pfOut.String())
		if m == nil {
			return false
		}
		code, b := httpGet(t, "http://127.0.0.1:"+m[1]+"/hello")
		body = b
		return code == http.StatusOK
	})
	if body != "forwarded /hello" {
		t.Errorf("through port-forward: %q\n%s", body, pfOut.String())
	}
	stopPF()
	_ = pf.Wait()

	// With a terminal (kubectl exec -it): its size as the client sets it,
	// what is typed echoed and read line by line.
	shown := execTTY(t, as, "sleeper", 100, 40, "typed\n", "sh", "-c", "sleep 0.5; stty size; read x; echo got $x")
	if !strings.Contains(shown, "40 100") || !strings.Contains(shown, "got typed") {
		t.Errorf("exec -it showed %q, want the size 40 100 and the line read back", shown)
	}
}

// openReader reads r, then blocks until done instead of ending.
type openReader struct {
	r    io.Reader
	done <-chan struct{}
}

func (o *openReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err == io.EOF {
		<-o.done
	}
	return n, err
}

// sizes hands out one terminal size, then says resizing is over.
type sizes struct {
	ch chan *remotecommand.TerminalSize
}

func (s sizes) Next() *remotecommand.TerminalSize { return <-s.ch }

// execTTY runs cmd in pod's container with a terminal of the given size
// through client-go's websocket executor (what kubectl exec -it uses),
// typing in, and returns what the terminal showed.
func execTTY(t *testing.T, as *framework.APIServer, pod string, width, height uint16, in string, cmd ...string) string {
	t.Helper()
	q := url.Values{"command": cmd, "stdin": {"true"}, "stdout": {"true"}, "tty": {"true"}}
	ex, err := remotecommand.NewWebSocketExecutor(&rest.Config{Host: as.URL}, "GET", as.URL+"/api/v1/namespaces/default/pods/"+pod+"/exec?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	queue := sizes{ch: make(chan *remotecommand.TerminalSize, 2)}
	queue.ch <- &remotecommand.TerminalSize{Width: width, Height: height}
	defer close(queue.ch)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	// Stdin stays open until the command has ended, as a person's
	// terminal does: its end would hang the terminal up (SIGHUP) before a
	// command that reads later, on a busy machine, gets to it.
	stdin := &openReader{r: strings.NewReader(in), done: ctx.Done()}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: true, TerminalSizeQueue: queue})
	if err != nil {
		t.Fatalf("exec -it %v: %v (shown %q)", cmd, err, out.String())
	}
	return out.String()
}
