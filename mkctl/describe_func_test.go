package mkctl

import (
	"encoding/base64"
	"strings"
	"testing"

	"minik8s/pkg/api"
)

// TestDescribeFuncShowsWhatItRuns: a Python function shows its runtime and
// source, with its plugins and files, an image function its image alone.
func TestDescribeFuncShowsWhatItRuns(t *testing.T) {
	src := base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg\n"))
	for _, tc := range []struct {
		name      string
		spec      api.FuncSpec
		want, not []string
	}{
		{"python", api.FuncSpec{Name: "f", Function: src},
			[]string{"Runtime:", "minik8s/python-runtime:latest", "Function:\n  def run(arg):"}, []string{"Image:", "Plugins:", "Files:"}},
		{"plugins", api.FuncSpec{Name: "f", Function: src, Plugins: &api.FuncPlugins{Pre: []string{"tracing", "gate"}, Post: []string{"gate"}},
			Files: map[string]string{"gate.py": base64.StdEncoding.EncodeToString([]byte("VERSION = \"2\"\ndef pre(ctx): pass\n"))}},
			[]string{"Plugins:\n  Pre:", "tracing@1, gate@2", "Post:", "gate@2", "Files:\n  gate.py: 33 bytes"}, nil},
		{"resources, outputs, config", api.FuncSpec{Name: "f", Function: src, IdleTimeoutSeconds: ptrInt(300),
			Resources: &api.ResourceRequirements{Limits: api.ResourceList{"memory": "64Mi"}},
			Outputs:   []api.FuncOutput{{Name: "audit", Function: "auditor"}, {Name: "bus", Subject: "orders"}},
			Config:    map[string]string{"level": "debug"}},
			[]string{"Idle Timeout:", "5m0s", "Resources:", "Limits:", "memory=64Mi", "Requests:", "<none>", "Outputs:", "audit:", "function auditor",
				"bus:", "subject orders", "Config:", "level:", "debug"}, nil},
		{"image", api.FuncSpec{Name: "f", Image: "minik8s/perl-example:latest"},
			[]string{"Image:", "minik8s/perl-example:latest"}, []string{"Runtime:", "Function:", "PreRun:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newDescribeWriter()
			describeFunc(w, &api.Func{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: tc.spec})
			out := w.String()
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("no %q in:\n%s", s, out)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(out, s) {
					t.Errorf("%q in:\n%s", s, out)
				}
			}
		})
	}
}

func ptrInt(v int) *int { return &v }
