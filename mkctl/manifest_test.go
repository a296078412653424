package mkctl

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/pkg/api"
)

func TestIsBase64AndEncodeSource(t *testing.T) {
	py := "def run(arg):\n    return arg\n"
	b64 := base64.StdEncoding.EncodeToString([]byte(py))
	for _, tc := range []struct {
		name     string
		in       string
		isBase64 bool
		encoded  string
	}{
		{"empty stays empty", "", true, ""},
		{"python source", py, false, b64},
		{"already base64", b64, true, b64},
		{"one-line shell", "pip install requests", false, base64.StdEncoding.EncodeToString([]byte("pip install requests"))},
		{"colon", "a:b", false, base64.StdEncoding.EncodeToString([]byte("a:b"))},
		{"alphabet but bad length", "abcde", false, base64.StdEncoding.EncodeToString([]byte("abcde"))},
		{"unpadded", "YWJj" + "ZA", false, base64.StdEncoding.EncodeToString([]byte("YWJjZA"))},
		{"wrapped base64 is text", b64[:8] + "\n" + b64[8:], false, base64.StdEncoding.EncodeToString([]byte(b64[:8] + "\n" + b64[8:]))},
		{"url alphabet is not std", "a-b_", false, base64.StdEncoding.EncodeToString([]byte("a-b_"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsBase64(tc.in); got != tc.isBase64 && tc.in != "" {
				t.Errorf("IsBase64(%q) = %v, want %v", tc.in, got, tc.isBase64)
			}
			if got := EncodeSource(tc.in); got != tc.encoded {
				t.Errorf("EncodeSource(%q) = %q, want %q", tc.in, got, tc.encoded)
			}
			// Encoding is idempotent, so applying a manifest twice sends the same.
			if got := EncodeSource(EncodeSource(tc.in)); got != tc.encoded {
				t.Errorf("EncodeSource twice = %q, want %q", got, tc.encoded)
			}
		})
	}
}

func TestParseManifestYAMLDocuments(t *testing.T) {
	data := `# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  k: v
--- # separator with a comment
# a document of comments only is skipped

---

apiVersion: v1
kind: Service
metadata:
  name: s
  namespace: other
spec:
  ports:
    - port: 80
      targetPort: 8080
    - port: 81
      targetPort: http
---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      image: i
      readinessProbe:
        httpGet:
          port: 8080
---
`
	docs, err := ParseManifest("m.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want 3", len(docs))
	}
	for i, want := range []struct {
		kind  string
		name  string
		index int
		line  int
	}{{"ConfigMap", "a", 1, 3}, {"Service", "s", 2, 14}, {"Pod", "p", 3, 26}} {
		d := docs[i]
		if d.Resource.Kind != want.kind || d.Object.GetObjectMeta().Name != want.name || d.Index != want.index || d.Line != want.line {
			t.Errorf("doc %d = %s %s index %d line %d, want %+v", i, d.Resource.Kind, d.Object.GetObjectMeta().Name, d.Index, d.Line, want)
		}
	}
	svc := docs[1].Object.(*api.Service)
	if svc.Namespace != "other" || svc.Spec.Ports[0].TargetPort != "8080" || svc.Spec.Ports[1].TargetPort != "http" {
		t.Errorf("service = %+v", svc)
	}
	if got := docs[2].Object.(*api.Pod).Spec.Containers[0].ReadinessProbe.HTTPGet.Port; got != "8080" {
		t.Errorf("probe port = %q, want \"8080\"", got)
	}
}

func TestParseManifestJSON(t *testing.T) {
	data := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}
{"apiVersion":"v1","kind":"ConfigMapList","items":[
  {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}},
  {"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"c"}}
]}`
	docs, err := ParseManifest("-", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range docs {
		names = append(names, d.Resource.Kind+"/"+d.Object.GetObjectMeta().Name)
	}
	if got := strings.Join(names, ","); got != "ConfigMap/a,ConfigMap/b,ReplicaSet/c" {
		t.Errorf("objects = %s", got)
	}
	if docs[1].Line != 2 || docs[1].Index != 2 {
		t.Errorf("list item at document %d line %d, want 2, 2", docs[1].Index, docs[1].Line)
	}
}

func TestParseManifestFunc(t *testing.T) {
	data := `apiVersion: v1
kind: Func
metadata:
  name: hello
spec:
  preRun: pip install nothing
  function: |
    def run(arg):
        return arg
`
	docs, err := ParseManifest("f.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	f := docs[0].Object.(*api.Func)
	if f.APIVersion != "v1" || f.Spec.Name != "hello" {
		t.Errorf("func = %+v", f)
	}
	src, err := base64.StdEncoding.DecodeString(f.Spec.Function)
	if err != nil || string(src) != "def run(arg):\n    return arg\n" {
		t.Errorf("function = %q (%v)", src, err)
	}
	pre, err := base64.StdEncoding.DecodeString(f.Spec.PreRun)
	if err != nil || string(pre) != "pip install nothing" {
		t.Errorf("preRun = %q (%v)", pre, err)
	}

	// The reference format names the function in spec.name only.
	docs, err = ParseManifest("f.json", []byte(`{"kind":"Func","apiVersion":"v2","metadata":{},"spec":{"name":"ref","function":"cHJpbnQoMSk="}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := docs[0].Object.(*api.Func); f.Name != "ref" || f.Spec.Function != "cHJpbnQoMSk=" {
		t.Errorf("reference func = %+v", f)
	}
}

func TestParseManifestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		data string
		want string
	}{
		{"malformed yaml, file line", "a.yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  labels: [x\n",
			"a.yaml: malformed YAML: line 9:"},
		{"unknown kind", "a.yaml", "apiVersion: v1\nkind: CSIDriver\nmetadata:\n  name: a\n",
			`a.yaml: document 1 (line 1): unknown kind "CSIDriver" (known kinds: App, ClusterRole, ClusterRoleBinding, ConfigMap, ControllerRevision, CronJob, CustomResourceDefinition, DaemonSet, Deployment, Endpoints, Event, Func, FuncInstance, FuncRevision, HorizontalPodAutoscaler, Ingress, IngressClass, Job, Lease, LimitRange, Namespace, NetworkPolicy, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodDisruptionBudget, PriorityClass, ReplicaSet, ResourceQuota, Role, RoleBinding, Secret, Service, ServiceAccount, StatefulSet, StorageClass, Trigger)`},
		{"kind in another group", "a.yaml", "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: a\n",
			`a.yaml: document 1 (line 1): apiVersion "v1" is not the version of Deployment (want "apps/v1")`},
		{"kind in wrong case", "a.yaml", "apiVersion: v1\nkind: pod\nmetadata:\n  name: a\n", `unknown kind "pod"`},
		{"missing kind", "a.yaml", "apiVersion: v1\nmetadata:\n  name: a\n", "a.yaml: document 1 (line 1): kind is missing"},
		{"missing name", "a.yaml", "apiVersion: v1\nkind: ConfigMap\n", "a.yaml: document 1 (line 1): metadata.name is required"},
		{"wrong version", "a.yaml", "apiVersion: v1\nkind: ReplicaSet\nmetadata:\n  name: a\n",
			`apiVersion "v1" is not the version of ReplicaSet (want "apps/v1")`},
		{"unknown field with its path", "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n    imgae: x\n",
			`a.yaml: document 1 (line 1): unknown field "spec.containers[0].imgae"`},
		{"wrong type", "a.yaml", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: a\nspec:\n  replicas: three\n",
			"spec.replicas: expected int32, got a string"},
		{"not an object", "a.yaml", "- a\n- b\n", "expected an object with apiVersion, kind and metadata, got a list"},
		{"bad list item", "a.json", `{"kind":"List","items":[{"kind":"ConfigMap","metadata":{"name":"a"}},{"kind":"Nope"}]}`,
			`items[1]: unknown kind "Nope"`},
		{"malformed json", "a.json", "{\"kind\": \"ConfigMap\",\n \"metadata\": {]}", "a.json: line 2: malformed JSON"},
		{"second document located", "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n\n# c\napiVersion: v1\nkind: Nope\n",
			"a.yaml: document 2 (line 8)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest(tc.src, []byte(tc.data))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestReadManifestsDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" }
	write("b.yml", cm("b"))
	write("a.yaml", cm("a1")+"---\n"+cm("a2"))
	write("c.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
	write("README.md", "not a manifest")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	docs, err := ReadManifests([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range docs {
		names = append(names, d.Object.GetObjectMeta().Name)
	}
	if got := strings.Join(names, ","); got != "a1,a2,b,c" {
		t.Errorf("order = %s, want a1,a2,b,c", got)
	}

	docs, err = ReadManifests([]string{"-"}, strings.NewReader(cm("stdin")))
	if err != nil || len(docs) != 1 || docs[0].Source != "-" {
		t.Errorf("stdin: %v %+v", err, docs)
	}
	if _, err := ReadManifests([]string{filepath.Join(dir, "missing.yaml")}, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing file: %v", err)
	}
	empty := t.TempDir()
	if _, err := ReadManifests([]string{empty}, nil); err == nil || !strings.Contains(err.Error(), "has no .yaml") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := ReadManifests([]string{"-"}, strings.NewReader("# nothing\n")); err == nil || !strings.Contains(err.Error(), "no objects") {
		t.Errorf("no objects: %v", err)
	}
}

// TestExampleManifests keeps yaml/ decodable: one object per kind, with
// plain-text function source encoded and no address off loopback.
func TestExampleManifests(t *testing.T) {
	docs, err := ReadManifests([]string{"../yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[d.Resource.Kind]++
		if ns := d.Object.GetObjectMeta().Namespace; d.Resource.Namespaced && ns != "default" {
			t.Errorf("%s: namespace %q, want default", d.where(), ns)
		}
	}
	for _, k := range []string{"Pod", "ReplicaSet", "Service", "ConfigMap", "Func", "Node", "Endpoints"} {
		if kinds[k] == 0 {
			t.Errorf("yaml/ has no %s", k)
		}
	}
	for _, d := range docs {
		switch o := d.Object.(type) {
		case *api.Func:
			if o.APIVersion != "v2" || !IsBase64(o.Spec.Function) || o.Spec.Left == "" || o.Spec.Right == "" {
				t.Errorf("func %+v", o.Spec)
			}
			if o.Spec.Image != "" {
				// A function in another language: its image is its code.
				if o.Spec.Function != "" || o.Spec.PreRun != "" {
					t.Errorf("image func %s has Python source too", o.Name)
				}
				continue
			}
			src, _ := base64.StdEncoding.DecodeString(o.Spec.Function)
			if !strings.Contains(string(src), "def run(") || !strings.Contains(string(src), "def check(") {
				t.Errorf("func source lacks run/check:\n%s", src)
			}
		case *api.Service:
			if ip := o.Spec.ClusterIP; ip != "" && !strings.HasPrefix(ip, "127.") {
				t.Errorf("service %s clusterIP %s is not loopback", o.Name, ip)
			}
		case *api.Endpoints:
			for _, s := range o.Subsets {
				for _, a := range s.Addresses {
					// Loopback, or the documentation range (RFC 5737) where
					// the example stands for a server the user names.
					if !strings.HasPrefix(a.IP, "127.") && !strings.HasPrefix(a.IP, "192.0.2.") {
						t.Errorf("endpoints %s address %s is neither loopback nor a documentation address", o.Name, a.IP)
					}
				}
			}
		case *api.Node:
			if !o.Spec.Unschedulable || o.Labels["example"] != "true" {
				t.Errorf("node %+v", o)
			}
		}
	}
}
