package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"minik8s/mkctl"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/test/framework"
)

// examplesDir holds the manifests users apply as they are.
const examplesDir = "../yaml"

// mkctlResult is what one in-process run of mkctl printed and returned.
type mkctlResult struct {
	out, err string
	code     int
}

// runMkctl runs mkctl against s in process.
func runMkctl(t *testing.T, s *framework.APIServer, stdin string, args ...string) mkctlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := mkctl.RunWithInput(ctx, append([]string{"--server", s.URL}, args...), strings.NewReader(stdin), &out, &errOut)
	return mkctlResult{out: out.String(), err: errOut.String(), code: code}
}

// mustMkctl runs mkctl and fails the test unless it succeeds quietly.
func mustMkctl(t *testing.T, s *framework.APIServer, args ...string) string {
	t.Helper()
	r := runMkctl(t, s, "", args...)
	if r.code != 0 || r.err != "" {
		t.Fatalf("mkctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

// exampleObjects lists "kind/name" of every object in yaml/, in apply order.
func exampleObjects(t *testing.T) []string {
	t.Helper()
	docs, err := mkctl.ReadManifests([]string{examplesDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range docs {
		ids = append(ids, strings.ToLower(d.Resource.Kind)+"/"+d.Object.GetObjectMeta().Name)
	}
	return ids
}

func expectLines(t *testing.T, what, got string, want []string) {
	t.Helper()
	if g := strings.Split(strings.TrimRight(got, "\n"), "\n"); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", what, got, strings.Join(want, "\n"))
	}
}

// tableRows parses a table into rows of fields, checking its header.
func tableRows(t *testing.T, table string, header ...string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != strings.Join(header, " ") {
		t.Fatalf("header %q, want %q\n%s", got, header, table)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	return rows
}

func TestMkctlApplyGetDescribeDelete(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	ids := exampleObjects(t)
	if len(ids) < 7 {
		t.Fatalf("yaml/ has only %v", ids)
	}

	t.Run("apply creates every example", func(t *testing.T) {
		var want []string
		for _, id := range ids {
			want = append(want, id+" created")
		}
		expectLines(t, "apply", mustMkctl(t, s, "apply", "-f", examplesDir), want)
	})

	t.Run("apply again changes nothing", func(t *testing.T) {
		var want []string
		for _, id := range ids {
			want = append(want, id+" unchanged")
		}
		expectLines(t, "second apply", mustMkctl(t, s, "apply", "-f", examplesDir), want)
	})

	t.Run("apply of a changed manifest configures", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(examplesDir, "replicaset.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(data), "replicas: 3", "replicas: 2", 1)
		if changed == string(data) {
			t.Fatal("replicaset.yaml has no 'replicas: 3'")
		}
		r := runMkctl(t, s, changed, "apply", "-f", "-")
		if r.code != 0 || r.out != "replicaset/web configured\n" {
			t.Fatalf("apply changed rs: %+v", r)
		}
		rs, err := s.Client.ReplicaSets("default").Get(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		if *rs.Spec.Replicas != 2 {
			t.Errorf("replicas = %d after apply, want 2", *rs.Spec.Replicas)
		}
		// Back to the file: configured again, then unchanged.
		out := mustMkctl(t, s, "apply", "-f", filepath.Join(examplesDir, "replicaset.yaml"))
		out += mustMkctl(t, s, "apply", "-f", filepath.Join(examplesDir, "replicaset.yaml"))
		expectLines(t, "re-apply", out, []string{"replicaset/web configured", "replicaset/web unchanged"})
	})

	t.Run("func source is stored as base64", func(t *testing.T) {
		f, err := s.Client.Funcs("default").Get(ctx, "halve")
		if err != nil {
			t.Fatal(err)
		}
		src, err := base64.StdEncoding.DecodeString(f.Spec.Function)
		if err != nil || !strings.Contains(string(src), "def run(arg):") || !strings.Contains(string(src), "def check(ret):") {
			t.Errorf("stored function %q decodes to %q (%v)", f.Spec.Function, src, err)
		}
		if f.APIVersion != "v2" || f.Spec.Name != "halve" {
			t.Errorf("func = %s %+v", f.APIVersion, f.Spec)
		}
	})

	t.Run("get tables", func(t *testing.T) {
		pods := tableRows(t, mustMkctl(t, s, "get", "po"), "NAME", "READY", "STATUS", "RESTARTS", "AGE")
		if p := pods["http-server"]; len(p) != 5 || p[1] != "0/1" || p[2] != "Pending" || p[3] != "0" || !regexp.MustCompile(`^\d+s$`).MatchString(p[4]) {
			t.Errorf("pod row %q", p)
		}
		wide := tableRows(t, mustMkctl(t, s, "get", "pods", "-o", "wide"), "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE")
		if p := wide["http-server"]; len(p) != 7 || p[5] != "<none>" || p[6] != "<none>" {
			t.Errorf("wide pod row %q", p)
		}
		rs := tableRows(t, mustMkctl(t, s, "get", "rs"), "NAME", "DESIRED", "CURRENT", "READY", "AGE")
		if r := rs["web"]; len(r) != 5 || r[1] != "3" || r[2] != "0" {
			t.Errorf("rs row %q", r)
		}
		svc := tableRows(t, mustMkctl(t, s, "get", "svc"), "NAME", "TYPE", "CLUSTER-IP", "PORT(S)", "AGE")
		if r := svc["web"]; len(r) != 5 || r[1] != "NodePort" || !regexp.MustCompile(`^80:3\d{4}/TCP$`).MatchString(r[3]) {
			t.Errorf("svc row %q", r)
		}
		nodes := tableRows(t, mustMkctl(t, s, "get", "no"), "NAME", "STATUS", "AGE", "VERSION")
		if r := nodes["example-node"]; len(r) != 4 || r[1] != "Unknown,SchedulingDisabled" {
			t.Errorf("node row %q", r)
		}
		eps := tableRows(t, mustMkctl(t, s, "get", "ep"), "NAME", "ENDPOINTS", "AGE")
		if r := eps["host-server"]; len(r) != 3 || r[1] != "192.0.2.10:8000" {
			t.Errorf("endpoints row %q", r)
		}
		cms := tableRows(t, mustMkctl(t, s, "get", "cm"), "NAME", "DATA", "AGE")
		if r := cms["app-config"]; len(r) != 3 || r[1] != "2" {
			t.Errorf("configmap row %q", r)
		}
		funcs := tableRows(t, mustMkctl(t, s, "get", "funcs"), "NAME", "VERSION", "LEFT", "RIGHT", "MIN", "MAX", "COUNTER", "REPLICAS", "READY", "AGE")
		if r := funcs["halve"]; len(r) != 10 || strings.Join(r[1:9], " ") != "v2 RETURN halve 0 3 0 - -" {
			t.Errorf("func row %q", r)
		}
		all := mustMkctl(t, s, "get", "func", "-A")
		tableRows(t, all, "NAMESPACE", "NAME", "VERSION", "LEFT", "RIGHT", "MIN", "MAX", "COUNTER", "REPLICAS", "READY", "AGE")
		if !regexp.MustCompile(`(?m)^default +halve +v2 +RETURN +halve +0 +3 +0 +- +- +\d+s$`).MatchString(all) {
			t.Errorf("func -A lacks the halve row:\n%s", all)
		}
		selected := tableRows(t, mustMkctl(t, s, "get", "pods", "-l", "app=http-server"), "NAME", "READY", "STATUS", "RESTARTS", "AGE")
		if len(selected) != 1 || selected["http-server"] == nil {
			t.Errorf("selected pods %v", selected)
		}
		r := runMkctl(t, s, "", "get", "pods", "-l", "app=nothing")
		if r.code != 0 || r.out != "" || r.err != "No resources found in default namespace.\n" {
			t.Errorf("empty selection: %+v", r)
		}
		if r := runMkctl(t, s, "", "get", "fi"); r.code != 0 || r.out != "" || r.err != "No resources found in default namespace.\n" {
			t.Errorf("no instances: %+v", r)
		}
	})

	t.Run("get -o json and yaml", func(t *testing.T) {
		var list struct {
			Kind  string    `json:"kind"`
			Items []api.Pod `json:"items"`
		}
		if err := json.Unmarshal([]byte(mustMkctl(t, s, "get", "pods", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if list.Kind != "PodList" || len(list.Items) != 1 || list.Items[0].Name != "http-server" || list.Items[0].UID == "" {
			t.Errorf("pod list %+v", list)
		}
		var svc api.Service
		if err := json.Unmarshal([]byte(mustMkctl(t, s, "get", "svc", "web", "-o", "json")), &svc); err != nil {
			t.Fatal(err)
		}
		if svc.Kind != "Service" || svc.Spec.Ports[0].TargetPort != "http" {
			t.Errorf("service %+v", svc)
		}
		var f api.Func
		if err := yaml.Unmarshal([]byte(mustMkctl(t, s, "get", "func", "halve", "-o", "yaml")), &f); err != nil {
			t.Fatal(err)
		}
		if f.Name != "halve" || f.Spec.Left != "RETURN" {
			t.Errorf("func %+v", f)
		}
		expectLines(t, "-o name", mustMkctl(t, s, "get", "cm", "-o", "name"), []string{"configmap/app-config"})
	})

	t.Run("describe", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"pod", "http-server"}, []string{"Name:", "http-server", "Namespace:", "default", "Labels:", "app=http-server",
				"Containers:", "Image:", "minik8s/python-runtime:latest", "Port(s):", "http", "Restart Count:", "Conditions:"}},
			{[]string{"rs", "web"}, []string{"Replicas:", "0 current / 3 desired", "Pods Status:", "0 Running / 0 Waiting",
				"Selector:", "app=web", "cpu:", "250m", "memory:", "64Mi"}},
			{[]string{"svc", "host-server"}, []string{"Type:", "ClusterIP", "Port:", "8000/TCP", "Endpoints:", "192.0.2.10:8000"}},
			{[]string{"no", "example-node"}, []string{"Labels:", "example=true", "Unschedulable:", "true", "Conditions:", "Addresses:"}},
			{[]string{"cm", "app-config"}, []string{"Data", "greeting:", "hello from minik8s", "workers = 2"}},
			{[]string{"func", "halve"}, []string{"Version:", "v2", "Left:", "RETURN", "Right:", "halve", "min 0 / init 1 / max 3",
				"PreRun:", `echo "halve: ready"`, "Function:", "  def run(arg):", "      return str(n // 2)", "def check(ret):"}},
			{[]string{"ep", "host-server"}, []string{"Subsets:", "Addresses:", "192.0.2.10", "8000"}},
		} {
			out := mustMkctl(t, s, append([]string{"describe"}, tc.args...)...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("describe %v lacks %q:\n%s", tc.args, w, out)
				}
			}
			if !strings.Contains(out, "CreationTimestamp:") {
				t.Errorf("describe %v lacks CreationTimestamp:\n%s", tc.args, out)
			}
		}
	})

	t.Run("delete by name", func(t *testing.T) {
		expectLines(t, "delete", mustMkctl(t, s, "delete", "cm", "app-config"), []string{`configmap "app-config" deleted`})
		if _, err := s.Client.ConfigMaps("default").Get(ctx, "app-config"); !errdefs.IsNotFound(err) {
			t.Errorf("configmap still there: %v", err)
		}
		r := runMkctl(t, s, "", "get", "cm", "app-config")
		if r.code != 1 || r.err != "Error from server (NotFound): ConfigMap \"app-config\" not found in namespace \"default\"\n" {
			t.Errorf("get deleted: %+v", r)
		}
	})

	t.Run("delete of a running pod shows Terminating", func(t *testing.T) {
		pod, err := s.Client.Pods("default").Get(ctx, "http-server")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Client.Bind(ctx, "default", pod.Name, pod.UID, "example-node"); err != nil {
			t.Fatal(err)
		}
		expectLines(t, "delete pod", mustMkctl(t, s, "delete", "pod", "http-server"), []string{`pod "http-server" deleted`})
		pods := tableRows(t, mustMkctl(t, s, "get", "pods", "-o", "wide"), "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE")
		if p := pods["http-server"]; len(p) != 7 || p[2] != "Terminating" || p[6] != "example-node" {
			t.Errorf("pod row %q", p)
		}
		// With no kubelet to finish the deletion, a grace period of 0 removes it.
		mustMkctl(t, s, "delete", "pod", "http-server", "--grace-period=0")
		if _, err := s.Client.Pods("default").Get(ctx, "http-server"); !errdefs.IsNotFound(err) {
			t.Errorf("pod still there: %v", err)
		}
	})

	t.Run("delete -f", func(t *testing.T) {
		file := filepath.Join(examplesDir, "endpoints.yaml")
		expectLines(t, "delete -f", mustMkctl(t, s, "delete", "-f", file),
			[]string{`service "host-server" deleted`, `endpoints "host-server" deleted`})
		r := runMkctl(t, s, "", "delete", "-f", file)
		if r.code != 1 || r.out != "" || len(strings.Split(strings.TrimSpace(r.err), "\n")) != 2 ||
			!strings.Contains(r.err, `Error from server (NotFound): Service "host-server" not found in namespace "default"`) {
			t.Errorf("second delete -f: %+v", r)
		}
		if r := runMkctl(t, s, "", "delete", "-f", file, "--ignore-not-found"); r.code != 0 || r.err != "" {
			t.Errorf("delete --ignore-not-found: %+v", r)
		}
		mustMkctl(t, s, "delete", "-f", examplesDir, "--ignore-not-found", "--grace-period=0")
		for _, kind := range []string{"pods", "rs", "svc", "ep", "cm", "funcs"} {
			if r := runMkctl(t, s, "", "get", kind); r.out != "" || r.code != 0 {
				t.Errorf("after deleting yaml/, get %s: %+v", kind, r)
			}
		}
		if out := mustMkctl(t, s, "get", "nodes", "-o", "name"); out != "" {
			t.Errorf("nodes left: %q", out)
		}
	})
}

func TestMkctlListsReferenceFormatFunc(t *testing.T) {
	s := framework.StartAPIServer(t)
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "v2", "kind": "Func",
		"metadata": map[string]any{"name": "append_world", "namespace": "default"},
		"spec": map[string]any{
			"name":     "append_world",
			"preRun":   base64.StdEncoding.EncodeToString([]byte("echo ready\n")),
			"function": base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg + ' world'\n")),
			"left":     "RETURN", "right": "RETURN", "serviceAddress": "",
			"initInstanceNum": 1, "maxInstanceNum": 4, "minInstanceNum": 1,
		},
	})
	resp, err := http.Post(s.URL+"/api/funcs/template", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("posting the template: %s", resp.Status)
	}
	rows := tableRows(t, mustMkctl(t, s, "get", "funcs"), "NAME", "VERSION", "LEFT", "RIGHT", "MIN", "MAX", "COUNTER", "REPLICAS", "READY", "AGE")
	if r := rows["append_world"]; len(r) != 10 || strings.Join(r[1:7], " ") != "v2 RETURN RETURN 1 4 0" {
		t.Errorf("row %q", r)
	}
	out := mustMkctl(t, s, "describe", "fn", "append_world")
	for _, w := range []string{"echo ready", "def run(arg):", "return arg + ' world'", "min 1 / init 1 / max 4"} {
		if !strings.Contains(out, w) {
			t.Errorf("describe lacks %q:\n%s", w, out)
		}
	}
	// Applying the same template as a manifest finds nothing to change.
	r := runMkctl(t, s, string(body), "apply", "-f", "-")
	if r.code != 0 || r.out != "func/append_world unchanged\n" {
		t.Errorf("apply of the posted template: %+v", r)
	}
}

// syncBuffer is a buffer a running command writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMkctlWatch(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	if _, err := s.Client.ConfigMaps("default").Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "before"}}); err != nil {
		t.Fatal(err)
	}
	watchCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- mkctl.RunWithInput(watchCtx, []string{"--server", s.URL, "get", "cm", "-w", "--output-watch-events"}, strings.NewReader(""), &out, &errOut)
	}()
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok(out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s; output so far:\n%s\nstderr:\n%s", what, out.String(), errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rowWith := func(fields ...string) func(string) bool {
		return func(s string) bool {
			for _, l := range strings.Split(s, "\n") {
				if f := strings.Fields(l); len(f) >= len(fields) && strings.Join(f[:len(fields)], " ") == strings.Join(fields, " ") {
					return true
				}
			}
			return false
		}
	}
	waitFor("the listed table", rowWith("ADDED", "before", "0"))
	cm, err := s.Client.ConfigMaps("default").Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "during"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor("the created row", rowWith("ADDED", "during", "0"))
	cm.Data = map[string]string{"k": "v"}
	if _, err := s.Client.ConfigMaps("default").Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitFor("the modified row", rowWith("MODIFIED", "during", "1"))
	if _, err := s.Client.ConfigMaps("default").Delete(ctx, "during", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the deleted row", rowWith("DELETED", "during"))
	cancel()
	select {
	case code := <-done:
		if code != 0 || errOut.String() != "" {
			t.Errorf("watch ended with %d, stderr %q", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("get -w did not end with its context")
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "EVENT NAME DATA AGE" || len(lines) != 5 {
		t.Errorf("watch output:\n%s", out.String())
	}
	// Rows line up under the header.
	col := strings.Index(lines[0], "NAME")
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row %q is not aligned with the header %q", l, lines[0])
		}
	}

	// A named watch sees only its object.
	watchCtx2, cancel2 := context.WithTimeout(ctx, 60*time.Second)
	defer cancel2()
	var out2, errOut2 syncBuffer
	done2 := make(chan int, 1)
	go func() {
		done2 <- mkctl.RunWithInput(watchCtx2, []string{"--server", s.URL, "get", "cm", "before", "-w", "-o", "name"}, strings.NewReader(""), &out2, &errOut2)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for out2.String() != "configmap/before\n" {
		if time.Now().After(deadline) {
			t.Fatalf("named watch printed %q", out2.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := s.Client.ConfigMaps("default").Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.ConfigMaps("default").Delete(ctx, "before", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for out2.String() != "configmap/before\nconfigmap/before\n" {
		if time.Now().After(deadline) {
			t.Fatalf("named watch printed %q", out2.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel2()
	if code := <-done2; code != 0 {
		t.Errorf("named watch ended with %d: %s", code, errOut2.String())
	}
}

func TestMkctlErrors(t *testing.T) {
	s := framework.StartAPIServer(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	malformed := write("malformed.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n")
	unknownKind := write("unknown.yaml", "apiVersion: v1\nkind: CSIDriver\nmetadata:\n  name: a\n")
	badName := write("badname.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n")
	badField := write("badfield.yaml", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: r\nspec:\n  replicas: -1\n"+
		"  selector:\n    matchLabels: {app: r}\n  template:\n    metadata:\n      labels: {app: r}\n    spec:\n      containers:\n      - {name: c, image: i}\n")
	partly := write("partly.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad\n")
	closed := func() string {
		// A loopback port nothing listens on.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	for _, tc := range []struct {
		name    string
		args    []string
		want    string // the whole stderr line, or a prefix ending in "..."
		stdout  string
		noServe bool
	}{
		{"malformed yaml", []string{"apply", "-f", malformed}, "error: " + malformed + ": malformed YAML: line 4: ...", "", false},
		{"unknown kind in a manifest", []string{"apply", "-f", unknownKind}, "error: " + unknownKind + `: document 1 (line 1): unknown kind "CSIDriver" ...`, "", false},
		{"invalid name", []string{"apply", "-f", badName},
			`Error from server (Invalid): error when creating "` + badName + `": ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must ...`, "", false},
		{"invalid field", []string{"apply", "-f", badField},
			`Error from server (Invalid): error when creating "` + badField + `": ReplicaSet.apps "r" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`, "", false},
		{"one bad document of two", []string{"apply", "-f", partly},
			`Error from server (Invalid): error when creating "` + partly + `": ConfigMap "Bad" is invalid: metadata.name: ...`, "configmap/good created\n", false},
		{"unknown kind", []string{"get", "csidrivers"}, `error: the server doesn't have a resource type "csidrivers" ...`, "", false},
		{"describe unknown kind", []string{"describe", "foo", "x"}, `error: the server doesn't have a resource type "foo" ...`, "", false},
		{"missing object", []string{"get", "pod", "nope"}, `Error from server (NotFound): Pod "nope" not found in namespace "default"`, "", false},
		{"missing in another namespace", []string{"describe", "svc", "nope", "-n", "other"}, `Error from server (NotFound): Service "nope" not found in namespace "other"`, "", false},
		{"delete missing", []string{"delete", "node", "nope"}, `Error from server (NotFound): Node "nope" not found`, "", false},
		{"no kind", []string{"get"}, "error: you must specify the kind of object: ...", "", false},
		{"bad output", []string{"get", "pods", "-o", "xml"}, `error: unknown output format "xml" ...`, "", false},
		{"bad flag", []string{"get", "pods", "--nope"}, "error: unknown flag: --nope (see 'mkctl get --help')", "", false},
		{"bad selector", []string{"get", "pods", "-l", "a in b"}, "Error from server (BadRequest): ...", "", false},
		{"missing file", []string{"apply", "-f", filepath.Join(dir, "none.yaml")}, `error: the path "` + filepath.Join(dir, "none.yaml") + `" does not exist`, "", false},
		{"no -f", []string{"apply"}, "error: must give a manifest with -f (see 'mkctl apply --help')", "", false},
		{"unreachable", []string{"--server", closed, "get", "pods"}, "error: cannot reach the apiserver at " + closed + " (set --server or MINIK8S_SERVER): ...", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r mkctlResult
			if tc.noServe {
				var out, errOut bytes.Buffer
				code := mkctl.RunWithInput(context.Background(), tc.args, strings.NewReader(""), &out, &errOut)
				r = mkctlResult{out: out.String(), err: errOut.String(), code: code}
			} else {
				r = runMkctl(t, s, "", tc.args...)
			}
			if r.code != 1 {
				t.Errorf("exit code %d, want 1", r.code)
			}
			if r.out != tc.stdout {
				t.Errorf("stdout %q, want %q", r.out, tc.stdout)
			}
			if strings.Count(r.err, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", r.err)
			}
			line := strings.TrimSuffix(r.err, "\n")
			if prefix, ok := strings.CutSuffix(tc.want, "..."); ok {
				if !strings.HasPrefix(line, prefix) {
					t.Errorf("stderr %q\nwant prefix %q", line, prefix)
				}
			} else if line != tc.want {
				t.Errorf("stderr %q\nwant        %q", line, tc.want)
			}
		})
	}
	// Nothing of a failed read was applied.
	names := []string{}
	cms, _, err := s.Client.ConfigMaps("").AllNamespaces().List(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "good" {
		t.Errorf("configmaps after the error cases: %v", names)
	}
}
