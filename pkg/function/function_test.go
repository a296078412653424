package function

import (
	"encoding/base64"
	"reflect"
	"testing"

	"minik8s/pkg/api"
)

// An image function's pod runs the image's entrypoint with no code volume,
// and is otherwise the Python function's pod: env, port, probes.
func TestPodSpecOfAnImageFunction(t *testing.T) {
	py := &api.Func{ObjectMeta: api.ObjectMeta{Name: "shout"}, Spec: api.FuncSpec{Name: "shout", Function: "ZGVm"}}
	img := &api.Func{ObjectMeta: api.ObjectMeta{Name: "shout"}, Spec: api.FuncSpec{Name: "shout", Image: "minik8s/perl-example:latest"}}
	p, i := PodSpec(py), PodSpec(img)
	pc, ic := p.Containers[0], i.Containers[0]
	if ic.Image != "minik8s/perl-example:latest" || len(ic.Command) != 0 || len(ic.VolumeMounts) != 0 || len(i.Volumes) != 0 {
		t.Errorf("image pod: %+v", i)
	}
	if pc.Image != "minik8s/python-runtime:latest" || !reflect.DeepEqual(pc.Command, []string{RuntimeBinary}) || len(p.Volumes) != 1 {
		t.Errorf("python pod: %+v", p)
	}
	env := func(c api.Container) map[string]string {
		m := map[string]string{}
		for _, e := range c.Env {
			m[e.Name] = e.Value
		}
		return m
	}
	want := env(pc)
	delete(want, "FUNC_CODE_DIR")
	if got := env(ic); !reflect.DeepEqual(got, want) {
		t.Errorf("image pod env %v, want %v", got, want)
	}
	if !reflect.DeepEqual(ic.Ports, pc.Ports) || !reflect.DeepEqual(ic.ReadinessProbe, pc.ReadinessProbe) ||
		!reflect.DeepEqual(ic.LivenessProbe, pc.LivenessProbe) || *i.TerminationGracePeriodSeconds != *p.TerminationGracePeriodSeconds {
		t.Errorf("image pod differs from the python pod beyond code: %+v\n%+v", i, p)
	}
}

func TestCodeHashFollowsTheImage(t *testing.T) {
	hashes := map[string]string{}
	for _, spec := range []api.FuncSpec{
		{Function: "ZGVm"},
		{Image: "minik8s/perl-example:latest"},
		{Image: "minik8s/perl-example:v2"},
	} {
		h := CodeHash(&spec)
		if other, ok := hashes[h]; ok {
			t.Errorf("%+v and %s have one hash %s", spec, other, h)
		}
		hashes[h] = spec.Function + spec.Image
	}
}

// A function's resources go on its container (the memory limit also as
// the env the runtime reports), change its hash (new pods), and keep it
// off warm generic pods; a function without them keeps its old hash.
func TestFunctionResources(t *testing.T) {
	plain := &api.Func{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: api.FuncSpec{Name: "f", Function: "ZGVm"}}
	sized := &api.Func{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: api.FuncSpec{Name: "f", Function: "ZGVm",
		Resources: &api.ResourceRequirements{Requests: api.ResourceList{"cpu": "250m"}, Limits: api.ResourceList{"memory": "64Mi"}}}}
	c := PodSpec(sized).Containers[0]
	if c.Resources.Requests["cpu"] != "250m" || c.Resources.Limits["memory"] != "64Mi" {
		t.Errorf("container resources %+v", c.Resources)
	}
	var memEnv *api.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == EnvMemoryLimit {
			memEnv = &c.Env[i]
		}
	}
	if memEnv == nil || memEnv.ValueFrom == nil || memEnv.ValueFrom.ResourceFieldRef == nil || memEnv.ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
		t.Errorf("env %s: %+v, want limits.memory from the downward API", EnvMemoryLimit, memEnv)
	}
	for _, e := range PodSpec(plain).Containers[0].Env {
		if e.Name == EnvMemoryLimit {
			t.Errorf("a function without a memory limit has %s (the downward API would say the node's memory)", EnvMemoryLimit)
		}
	}
	c.Resources.Limits["memory"] = "1Gi"
	if sized.Spec.Resources.Limits["memory"] != "64Mi" {
		t.Error("the pod spec shares the function's resource maps")
	}
	if CodeHash(&plain.Spec) == CodeHash(&sized.Spec) {
		t.Error("resources do not change the hash: the pods would keep the old ones")
	}
	empty := *plain
	empty.Spec.Resources = &api.ResourceRequirements{}
	if CodeHash(&plain.Spec) != CodeHash(&empty.Spec) || !CanUseWarm(&empty) {
		t.Error("empty resources change the hash or keep the function off warm pods")
	}
	if !CanUseWarm(plain) || CanUseWarm(sized) {
		t.Errorf("CanUseWarm: plain %v sized %v, want true false", CanUseWarm(plain), CanUseWarm(sized))
	}
}

func TestPluginVersion(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	spec := &api.FuncSpec{Files: map[string]string{
		"audit.py":    b64("import os\nVERSION = \"2.1\"  # bumped\ndef pre(ctx):\n    pass\n"),
		"single.py":   b64("VERSION='3'\n"),
		"number.py":   b64("VERSION = 4\n"),
		"none.py":     b64("def pre(ctx):\n    pass\n"),
		"computed.py": b64("VERSION = os.environ['V']\n"),
	}}
	for name, want := range map[string]string{"tracing": "1", "audit": "2.1", "single": "3", "number": "4", "none": "0", "computed": "", "missing": "0"} {
		if got := PluginVersion(spec, name); got != want {
			t.Errorf("PluginVersion(%s) = %q, want %q", name, got, want)
		}
	}
}
