package mkctl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

func TestTemplateFlagsChangeOnlyWhatIsGiven(t *testing.T) {
	dir := t.TempDir()
	code := filepath.Join(dir, "code.py")
	pre := filepath.Join(dir, "setup.sh")
	if err := os.WriteFile(code, []byte("def run(arg):\n    return arg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pre, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	base := func() *api.Func {
		return &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2", Kind: "Func"}, ObjectMeta: api.ObjectMeta{Name: "f"},
			Spec: api.FuncSpec{Name: "f", Function: "b2xk", Left: "a", Right: "b", MaxInstanceNum: intp(4)}}
	}
	for _, tc := range []struct {
		name  string
		args  []string
		want  func(*api.Func)
		given bool
	}{
		{"nothing", nil, func(*api.Func) {}, false},
		{"code and pre-run are read and encoded", []string{"-f", code, "--pre-run", pre}, func(f *api.Func) {
			f.Spec.Function = b64("def run(arg):\n    return arg\n")
			f.Spec.PreRun = b64("echo hi\n")
		}, true},
		{"branches", []string{"--left", "RETURN", "--right", "other"}, func(f *api.Func) { f.Spec.Left, f.Spec.Right = "RETURN", "other" }, true},
		{"an empty branch is given too", []string{"--left="}, func(f *api.Func) { f.Spec.Left = "" }, true},
		{"bounds and timeout", []string{"--min", "0", "--init", "2", "--timeout", "5"}, func(f *api.Func) {
			f.Spec.MinInstanceNum, f.Spec.InitInstanceNum, f.Spec.TimeoutSeconds = intp(0), intp(2), intp(5)
		}, true},
		{"v1", []string{"--v1"}, func(f *api.Func) { f.APIVersion = "v1" }, true},
		{"back to v2", []string{"--v1=false"}, func(f *api.Func) { f.APIVersion = "v2" }, true},
		// An image replaces the Python source and what goes with it.
		{"image", []string{"--image", "minik8s/perl-example:latest"}, func(f *api.Func) {
			f.Spec.Image, f.Spec.Function = "minik8s/perl-example:latest", ""
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tf := parseTemplateFlags(t, tc.args...)
			got, want := base(), base()
			tc.want(want)
			if err := tf.apply(got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			if tf.given() != tc.given {
				t.Errorf("given = %v", tf.given())
			}
		})
	}

	if err := parseTemplateFlags(t, "-f", filepath.Join(dir, "missing.py")).apply(base()); err == nil || !strings.Contains(err.Error(), "-f: open") || !strings.Contains(err.Error(), "missing.py") {
		t.Errorf("missing file: %v", err)
	}

	// An image function that gets source again is a Python one; one that
	// gets an image loses its pre-run script and runtime.
	img := base()
	img.Spec.Function, img.Spec.Image = "", "perl-example"
	if err := parseTemplateFlags(t, "-f", code).apply(img); err != nil || img.Spec.Image != "" || img.Spec.Function != b64("def run(arg):\n    return arg\n") {
		t.Errorf("image to source: %v %+v", err, img.Spec)
	}
	py := base()
	py.Spec.PreRun, py.Spec.Runtime = b64("echo hi\n"), "my/runtime"
	if err := parseTemplateFlags(t, "--image", "perl-example").apply(py); err != nil || py.Spec.PreRun != "" || py.Spec.Runtime != "" || py.Spec.Function != "" {
		t.Errorf("source to image: %v %+v", err, py.Spec)
	}
	if err := parseTemplateFlags(t, "-f", code, "--image", "x").apply(base()); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("-f and --image: %v", err)
	}
	if err := parseTemplateFlags(t, "--image=").apply(base()); err == nil || !strings.Contains(err.Error(), "no image") {
		t.Errorf("--image=: %v", err)
	}
}

func parseTemplateFlags(t *testing.T, args ...string) *templateFlags {
	t.Helper()
	tf := &templateFlags{}
	tf.register(pflag.NewFlagSet("test", pflag.ContinueOnError))
	if err := tf.fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return tf
}

func TestInvokeFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "arg.txt")
	if err := os.WriteFile(file, []byte("from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		stdin   string
		arg     string
		wait    time.Duration
		wantErr string
	}{
		{name: "no argument, no wait", args: nil, arg: ""},
		{name: "inline", args: []string{"-d", "21"}, arg: "21"},
		{name: "@file", args: []string{"-d", "@" + file}, arg: "from a file\n"},
		{name: "--data-file", args: []string{"--data-file", file}, arg: "from a file\n"},
		{name: "@- reads stdin", args: []string{"-d", "@-"}, stdin: "piped", arg: "piped"},
		{name: "--data-file -", args: []string{"--data-file", "-"}, stdin: "piped", arg: "piped"},
		{name: "both", args: []string{"-d", "x", "--data-file", file}, wantErr: "either -d or --data-file"},
		{name: "missing file", args: []string{"-d", "@" + filepath.Join(dir, "nope")}, wantErr: "reading the argument: open"},
		{name: "bare @", args: []string{"-d", "@"}, wantErr: "no file named"},
		{name: "--wait alone waits 60s", args: []string{"--wait"}, wait: time.Minute},
		{name: "--wait=2m", args: []string{"--wait=2m"}, wait: 2 * time.Minute},
		{name: "--wait=30 is seconds", args: []string{"--wait=30"}, wait: 30 * time.Second},
		{name: "--wait=0", args: []string{"--wait=0"}, wantErr: "must be more than 0"},
		{name: "--wait=soon", args: []string{"--wait=soon"}, wantErr: "not a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newFuncInvokeCommand(&Options{})
			fs := cmd.Flags()
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			f := &invokeFlags{}
			f.data, _ = fs.GetString("data")
			f.dataFile, _ = fs.GetString("data-file")
			f.wait, _ = fs.GetString("wait")
			wait, err := f.waitFor(fs)
			var arg []byte
			if err == nil {
				arg, err = f.argument(fs, strings.NewReader(tc.stdin))
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(arg) != tc.arg || arg == nil || wait != tc.wait {
				t.Errorf("arg %q wait %s, want %q %s", arg, wait, tc.arg, tc.wait)
			}
		})
	}
}

func TestFuncCommandLineMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"func", "create", "f"}, "error: must give the function's source with -f FILE, or its image with --image IMAGE (see 'mkctl func create --help')"},
		{[]string{"func", "create"}, "error: you must give the name of the function (see 'mkctl func create --help')"},
		{[]string{"func", "update", "f"}, "error: nothing to change: give -f, --image, --pre-run, --left, --right, --min, --max, --init, --timeout, --traffic or --v1 (see 'mkctl func update --help')"},
		{[]string{"func", "invoke", "f", "--wait", "30s"}, "error: write --wait=30s (with '=') to wait 30s (see 'mkctl func invoke --help')"},
		{[]string{"func", "invoke", "f", "g"}, `error: give one name of the function, not ["f" "g"] (see 'mkctl func invoke --help')`},
		{[]string{"func", "result", "x", "-o", "wide"}, `error: unknown output format "wide" (want json, yaml or raw) (see 'mkctl func result --help')`},
		{[]string{"func", "logs"}, "error: you must give the instance id of the call (see 'mkctl func logs --help')"},
		{[]string{"func", "delete"}, "error: you must give the name of the function (see 'mkctl func delete --help')"},
	} {
		var out, errOut bytes.Buffer
		// The server is never reached: every mistake is found first.
		code := RunWithInput(t.Context(), append([]string{"--server", "127.0.0.1:1"}, tc.args...), strings.NewReader(""), &out, &errOut)
		if code != 1 || out.Len() != 0 || strings.TrimSuffix(errOut.String(), "\n") != tc.want {
			t.Errorf("mkctl %v: exit %d, stdout %q, stderr %q\nwant %q", tc.args, code, out.String(), errOut.String(), tc.want)
		}
	}
}

// TestFuncAPIErrors: error answers of the function API print as the
// apiserver's, classed as errdefs says.
func TestFuncAPIErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		answer string
		want   string
	}{
		{"a Status", 404, `{"error":"function \"nobody\" not found in namespace \"default\": not found","reason":"NotFound","code":404}`,
			`Error from server (NotFound): function "nobody" not found in namespace "default"`},
		// Answers that are not a Status (a proxy's page) still make one line.
		{"plain text", 502, "bad gateway\n", "Error from server (InternalError): bad gateway"},
		{"empty", 503, "", "Error from server (ServiceUnavailable): Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.code)
				io.WriteString(w, tc.answer)
			}))
			defer srv.Close()
			o := &Options{Server: srv.URL, Namespace: "default"}
			_, err := o.funcCalls().Invoke(t.Context(), "nobody", []byte("x"), client.InvokeOptions{})
			if tc.code == 404 && !errdefs.IsNotFound(err) {
				t.Errorf("not classed NotFound: %v", err)
			}
			if got := FormatError(err); got != tc.want {
				t.Errorf("FormatError = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCallError(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{`function "raises" failed: ZeroDivisionError: division by zero`,
			`function "raises" failed: ZeroDivisionError: division by zero (see 'mkctl func logs id-1')`},
		{"hop limit of 100 reached before RETURN (the chain loops?): next was \"forever\"",
			`function "first" failed: hop limit of 100 reached before RETURN (the chain loops?): next was "forever" (see 'mkctl func logs id-1')`},
		{"", `function "first" failed: failed without an error message (see 'mkctl func logs id-1')`},
		{"line one\nline two", `function "first" failed: line one line two (see 'mkctl func logs id-1')`},
	} {
		if got := callError("first", api.FuncInstanceView{InstanceID: "id-1", Error: tc.err}); got != tc.want {
			t.Errorf("callError(%q) = %q\nwant %q", tc.err, got, tc.want)
		}
	}
}

// fakeCalls is an apiserver whose calls of hello answer 202 and whose
// instance id-1 ends in phase after the first read (never if phase is
// Running).
func fakeCalls(t *testing.T, phase, errMsg string) string {
	t.Helper()
	var mu sync.Mutex
	reads := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/funcs/hello":
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"instanceId":"id-1","status":"Running"}`)
		case r.URL.Path == "/api/funcs/id-1":
			reads++
			v := api.FuncInstanceView{InstanceID: "id-1", Function: "hello", Status: api.InstanceRunning, Steps: []api.FuncStepRecord{}}
			if reads > 1 {
				v.Status, v.Result, v.Error = phase, "HELLO", errMsg
			}
			json.NewEncoder(w).Encode(v)
		case r.URL.Path == api.FuncInstancesResource.Path("default", "") && r.URL.Query().Get("watch") == "":
			// The list of the watch: its ADDED event makes Follow read again.
			inst := api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "id-1", Namespace: "default", ResourceVersion: "1"}}
			json.NewEncoder(w).Encode(api.FuncInstanceList{ListMeta: api.ListMeta{ResourceVersion: "1"}, Items: []api.FuncInstance{inst}})
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"not here: not found","reason":"NotFound","code":404}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestInvokeWait(t *testing.T) {
	for _, tc := range []struct {
		name, phase, errMsg, wait string
		code                      int
		out, lastErr              string
	}{
		{name: "succeeds", phase: api.InstanceSucceeded, wait: "--wait=30s", out: "HELLO\n"},
		{name: "fails", phase: api.InstanceFailed, errMsg: "boom", wait: "--wait=30s", code: 1,
			lastErr: `Error: function "hello" failed: boom (see 'mkctl func logs id-1')`},
		{name: "outlasts the wait", phase: api.InstanceRunning, wait: "--wait=1500ms", code: 1,
			lastErr: `error: function "hello" still Running after 1.5s: see its result later with 'mkctl func result id-1'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := fakeCalls(t, tc.phase, tc.errMsg)
			var out, errOut bytes.Buffer
			code := RunWithInput(t.Context(), []string{"--server", url, "func", "invoke", "hello", "-d", "hello", tc.wait},
				strings.NewReader(""), &out, &errOut)
			lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
			if code != tc.code || out.String() != tc.out || !regexp.MustCompile(`^waiting for hello \d+s\.\.\.$`).MatchString(lines[0]) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
			}
			if last := lines[len(lines)-1]; tc.lastErr != "" && last != tc.lastErr {
				t.Errorf("stderr ends %q, want %q", last, tc.lastErr)
			}
		})
	}
}

func TestApplyOutput(t *testing.T) {
	f := &api.Func{}
	for _, arg := range []string{"audit=function:auditor", "bus=subject:orders.new", "hook=url:https://example.com/x", "bus=subject:orders.old", "audit-"} {
		if err := applyOutput(f, arg); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
	}
	want := []api.FuncOutput{{Name: "hook", URL: "https://example.com/x"}, {Name: "bus", Subject: "orders.old"}}
	if !reflect.DeepEqual(f.Spec.Outputs, want) {
		t.Errorf("outputs %+v, want %+v", f.Spec.Outputs, want)
	}
	for _, bad := range []string{"audit", "audit=auditor", "audit=queue:x", "=function:x", "a=function:"} {
		if err := applyOutput(f, bad); err == nil || !strings.Contains(err.Error(), "NAME=function:F") {
			t.Errorf("--output %s: %v, want the forms named", bad, err)
		}
	}
}
