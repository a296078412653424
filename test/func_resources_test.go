package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// checkFuncResources: a function made with mkctl's --memory, --cpu,
// --config and --idle-timeout runs in pods of its own (not warm generic
// ones, which have no resources) that request and are limited to them; a
// call reads the real limit as context["memory-limit"] and the config as
// context["config"]; describe shows them all.
func checkFuncResources(t *testing.T, s *framework.APIServer) {
	src := filepath.Join(t.TempDir(), "sized.py")
	code := "def run(event, context):\n    return {'mem': context['memory-limit'], 'config': context['config']}\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	mustMkctl(t, s, "func", "create", "sized", "-f", src, "--memory", "96Mi", "--cpu", "500m",
		"--config", "level=debug", "--config", "db=orders", "--idle-timeout", "3s", "--max", "1")

	v := syncInvoke(t, s, "sized", "x")
	var got struct {
		Mem    string            `json:"mem"`
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal([]byte(v.Result), &got); v.Status != api.InstanceSucceeded || err != nil {
		t.Fatalf("call: %+v (%v)", v, err)
	}
	if got.Mem != "100663296" || len(got.Config) != 2 || got.Config["level"] != "debug" || got.Config["db"] != "orders" {
		t.Errorf("context: memory-limit %q config %v, want 100663296 (96Mi) and the function's config", got.Mem, got.Config)
	}
	if pod := v.Steps[0].Pod; !strings.HasPrefix(pod, function.ObjectName("sized")) {
		t.Errorf("the call ran in pod %q, want one of the function's own (a warm pod has no resources)", pod)
	}
	pods, _, err := s.Client.Pods("default").List(t.Context(), client.ListOptions{LabelSelector: function.LabelFunc + "=sized"})
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods of sized: %d, %v", len(pods), err)
	}
	r := pods[0].Spec.Containers[0].Resources
	if r.Limits["memory"] != "96Mi" || r.Requests["memory"] != "96Mi" || r.Limits["cpu"] != "500m" || r.Requests["cpu"] != "500m" {
		t.Errorf("the pod's resources: %+v, want 96Mi and 500m requested and limited", r)
	}
	out := mustMkctl(t, s, "describe", "func", "sized")
	for _, want := range []string{"Idle Timeout:", "3s", "Limits:", "cpu=500m, memory=96Mi", "level:", "debug"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe func sized does not show %q:\n%s", want, out)
		}
	}
	// Removed again, the pods follow: a change of resources makes new ones.
	mustMkctl(t, s, "func", "update", "sized", "--memory", "", "--cpu", "")
	waitFor(t, "pods without resources", 60*time.Second, func() bool {
		pods, _, err := s.Client.Pods("default").List(t.Context(), client.ListOptions{LabelSelector: function.LabelFunc + "=sized"})
		if err != nil {
			return false
		}
		for _, p := range pods {
			if len(p.Spec.Containers[0].Resources.Limits) > 0 {
				return false
			}
		}
		return true
	})
	if v := syncInvoke(t, s, "sized", "x"); !strings.Contains(string(v.Result), `"mem": ""`) {
		t.Errorf("after the limit was removed: %+v, want memory-limit empty", v)
	}
}
