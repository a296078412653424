package function

import (
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
