package validation

import (
	"encoding/base64"
	"math"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func ptr[T any](v T) *T { return &v }

var code = base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg\n"))

func validFunc() *api.Func {
	return &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2", Kind: "Func"},
		ObjectMeta: api.ObjectMeta{Name: "append_world", Namespace: "default"},
		Spec:       api.FuncSpec{Name: "append_world", Function: code, Left: "RETURN"}}
}

func validPod() *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "img",
			Ports: []api.ContainerPort{{Name: "http"}}}}}}
	Default(api.PodsResource, p)
	return p
}

func TestFunc(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(f *api.Func)
		field string
	}{
		{"valid", func(f *api.Func) {}, ""},
		{"valid v1", func(f *api.Func) { f.APIVersion = "v1" }, ""},
		{"bad version", func(f *api.Func) { f.APIVersion = "v3" }, "apiVersion"},
		{"RETURN reserved", func(f *api.Func) { f.Name, f.Spec.Name = "RETURN", "RETURN" }, "metadata.name"},
		{"template reserved", func(f *api.Func) { f.Name, f.Spec.Name = "template", "template" }, "metadata.name"},
		{"bad chars", func(f *api.Func) { f.Name, f.Spec.Name = "a b", "a b" }, "metadata.name"},
		{"name mismatch", func(f *api.Func) { f.Spec.Name = "other" }, "spec.name"},
		{"no code", func(f *api.Func) { f.Spec.Function = "" }, "spec.function"},
		{"bad base64", func(f *api.Func) { f.Spec.Function = "def run" }, "spec.function"},
		{"bad preRun", func(f *api.Func) { f.Spec.PreRun = "%%%" }, "spec.preRun"},
		{"image", func(f *api.Func) { f.Spec.Function, f.Spec.Image = "", "minik8s/perl-example:latest" }, ""},
		{"image v1", func(f *api.Func) { f.APIVersion, f.Spec.Function, f.Spec.Image = "v1", "", "perl-example" }, ""},
		{"image and source", func(f *api.Func) { f.Spec.Image = "minik8s/perl-example:latest" }, "spec.image"},
		{"image and preRun", func(f *api.Func) {
			f.Spec.Function, f.Spec.Image, f.Spec.PreRun = "", "perl-example", code
		}, "spec.preRun"},
		{"image and runtime", func(f *api.Func) {
			f.Spec.Function, f.Spec.Image, f.Spec.Runtime = "", "perl-example", "minik8s/python-runtime:latest"
		}, "spec.runtime"},
		{"bad image", func(f *api.Func) { f.Spec.Function, f.Spec.Image = "", "Perl Example" }, "spec.image"},
		{"blank image", func(f *api.Func) { f.Spec.Function, f.Spec.Image = "", " " }, "spec.image"},
		{"builtin plugins", func(f *api.Func) {
			f.Spec.Plugins = &api.FuncPlugins{Pre: []string{"tracing", "log-context"}, Post: []string{"metrics"}}
		}, ""},
		{"user plugin", func(f *api.Func) {
			f.Spec.Plugins, f.Spec.Files = &api.FuncPlugins{Pre: []string{"audit"}}, map[string]string{"audit.py": code}
		}, ""},
		{"plugin without its module", func(f *api.Func) { f.Spec.Plugins = &api.FuncPlugins{Post: []string{"metrics", "audit"}} }, "spec.plugins.post[1]"},
		{"plugin twice", func(f *api.Func) { f.Spec.Plugins = &api.FuncPlugins{Pre: []string{"tracing", "tracing"}} }, "spec.plugins.pre[1]"},
		{"plugin not a module name", func(f *api.Func) { f.Spec.Plugins = &api.FuncPlugins{Pre: []string{"a-b"}} }, "spec.plugins.pre[0]"},
		{"plugins of an image", func(f *api.Func) {
			f.Spec.Function, f.Spec.Image, f.Spec.Plugins = "", "perl-example", &api.FuncPlugins{Pre: []string{"tracing"}}
		}, "spec.plugins"},
		{"file over function.py", func(f *api.Func) { f.Spec.Files = map[string]string{"function.py": code} }, "spec.files.function.py"},
		{"file not base64", func(f *api.Func) { f.Spec.Files = map[string]string{"util.py": "%%"} }, "spec.files.util.py"},
		{"file bad name", func(f *api.Func) { f.Spec.Files = map[string]string{"a/b.py": code} }, "spec.files.a/b.py"},
		{"bad left", func(f *api.Func) { f.Spec.Left = "no good" }, "spec.left"},
		{"right template", func(f *api.Func) { f.Spec.Right = "template" }, "spec.right"},
		{"bad address", func(f *api.Func) { f.Spec.ServiceAddress = "nowhere" }, "spec.serviceAddress"},
		{"negative min", func(f *api.Func) { f.Spec.MinInstanceNum = ptr(-1) }, "spec.minInstanceNum"},
		{"min > max", func(f *api.Func) { f.Spec.MinInstanceNum, f.Spec.MaxInstanceNum = ptr(3), ptr(2) }, "spec.minInstanceNum"},
		{"init > max", func(f *api.Func) { f.Spec.InitInstanceNum, f.Spec.MaxInstanceNum = ptr(3), ptr(2) }, "spec.initInstanceNum"},
		{"init < min", func(f *api.Func) {
			f.Spec.InitInstanceNum, f.Spec.MinInstanceNum, f.Spec.MaxInstanceNum = ptr(1), ptr(2), ptr(4)
		}, "spec.initInstanceNum"},
		{"max 0", func(f *api.Func) { f.Spec.MaxInstanceNum = ptr(0) }, "spec.maxInstanceNum"},
		{"timeout", func(f *api.Func) { f.Spec.TimeoutSeconds = ptr(0) }, "spec.timeoutSeconds"},
		{"max int32", func(f *api.Func) { f.Spec.MaxInstanceNum = ptr(math.MaxInt32) }, ""},
		{"init above int32", func(f *api.Func) { f.Spec.InitInstanceNum = ptr(math.MaxInt32 + 1) }, "spec.initInstanceNum"},
		{"max above int32", func(f *api.Func) { f.Spec.MaxInstanceNum = ptr(math.MaxInt32 + 1) }, "spec.maxInstanceNum"},
		{"min above int32", func(f *api.Func) { f.Spec.MinInstanceNum = ptr(math.MaxInt64) }, "spec.minInstanceNum"},
		{"all above int32", func(f *api.Func) {
			f.Spec.InitInstanceNum, f.Spec.MinInstanceNum, f.Spec.MaxInstanceNum = ptr(1<<40), ptr(1<<40), ptr(1<<40)
		}, "spec.initInstanceNum"},
	}
	for _, tc := range tests {
		f := validFunc()
		tc.edit(f)
		err := Object(api.FuncsResource, f)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errdefs.IsInvalid(err) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: got %v (field %q), want Invalid on %s", tc.name, err, errdefs.Field(err), tc.field)
		}
	}
}

func TestFuncBounds(t *testing.T) {
	tests := []struct {
		spec           api.FuncSpec
		min, init, max int
	}{
		{api.FuncSpec{}, 0, 1, 10},
		{api.FuncSpec{MinInstanceNum: ptr(2)}, 2, 2, 10},
		{api.FuncSpec{MaxInstanceNum: ptr(3)}, 0, 1, 3},
		{api.FuncSpec{InitInstanceNum: ptr(0)}, 0, 0, 10},
		{api.FuncSpec{InitInstanceNum: ptr(20)}, 0, 20, 20},
		{api.FuncSpec{MinInstanceNum: ptr(12)}, 12, 12, 12},
	}
	for _, tc := range tests {
		min, init, max := FuncBounds(&tc.spec)
		if min != tc.min || init != tc.init || max != tc.max {
			t.Errorf("%+v: %d %d %d, want %d %d %d", tc.spec, min, init, max, tc.min, tc.init, tc.max)
		}
	}
}

func TestPod(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(p *api.Pod)
		field string
	}{
		{"valid", func(p *api.Pod) {}, ""},
		{"bad name", func(p *api.Pod) { p.Name = "Web" }, "metadata.name"},
		{"bad namespace", func(p *api.Pod) { p.Namespace = "a.b" }, "metadata.namespace"},
		{"bad label", func(p *api.Pod) { p.Labels = map[string]string{"a": "no spaces"} }, "metadata.labels.a"},
		{"no image", func(p *api.Pod) { p.Spec.Containers[0].Image = " " }, "spec.containers[0].image"},
		{"dup container", func(p *api.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }, "spec.containers[1].name"},
		{"bad cpu", func(p *api.Pod) { p.Spec.Containers[0].Resources.Limits = api.ResourceList{"cpu": "fast"} }, "spec.containers[0].resources.limits.cpu"},
		{"bad memory", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"memory": "64Zi"} }, "spec.containers[0].resources.requests.memory"},
		{"port range", func(p *api.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, "spec.containers[0].ports[0].containerPort"},
		{"udp", func(p *api.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "UDP" }, "spec.containers[0].ports[0].protocol"},
		{"host IP not an address", func(p *api.Pod) {
			p.Spec.Containers[0].Ports[0].HostPort, p.Spec.Containers[0].Ports[0].HostIP = 8080, "node-1"
		}, "spec.containers[0].ports[0].hostIP"},
		{"host IP without host port", func(p *api.Pod) { p.Spec.Containers[0].Ports[0].HostIP = "10.98.0.2" }, "spec.containers[0].ports[0].hostIP"},
		{"restart policy", func(p *api.Pod) { p.Spec.RestartPolicy = "Sometimes" }, "spec.restartPolicy"},
		{"mount without volume", func(p *api.Pod) {
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "v", MountPath: "/v"}}
		}, "spec.containers[0].volumeMounts[0].name"},
		{"volume two sources", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "v", EmptyDir: &api.EmptyDirVolumeSource{}, HostPath: &api.HostPathVolumeSource{Path: "/x"}}}
		}, "spec.volumes[0]"},
		{"relative hostPath", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "v", HostPath: &api.HostPathVolumeSource{Path: "x"}}}
		}, "spec.volumes[0].hostPath.path"},
		{"probe by name", func(p *api.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &api.Probe{HTTPGet: &api.HTTPGetAction{Port: "http"}}
		}, ""},
		{"probe unknown port", func(p *api.Pod) {
			p.Spec.Containers[0].LivenessProbe = &api.Probe{HTTPGet: &api.HTTPGetAction{Port: "nope"}}
		}, "spec.containers[0].livenessProbe.httpGet.port"},
		{"env name", func(p *api.Pod) { p.Spec.Containers[0].Env = []api.EnvVar{{Name: "1X"}} }, "spec.containers[0].env[0].name"},
		{"resources", func(p *api.Pod) {
			p.Spec.Containers[0].Resources.Limits = api.ResourceList{"cpu": "500m", "memory": "7Ei"}
			p.Spec.Containers[0].Resources.Requests = api.ResourceList{"cpu": "0.1m", "memory": "64Mi"}
		}, ""},
		{"negative cpu", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"cpu": "-1"} }, "spec.containers[0].resources.requests.cpu"},
		// Quantities beyond int64 are errors, not wrapped or saturated values.
		{"cpu overflow", func(p *api.Pod) { p.Spec.Containers[0].Resources.Limits = api.ResourceList{"cpu": "1e19"} }, "spec.containers[0].resources.limits.cpu"},
		{"cpu overflow request", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"cpu": "10Ei"} }, "spec.containers[0].resources.requests.cpu"},
		{"memory overflow", func(p *api.Pod) { p.Spec.Containers[0].Resources.Limits = api.ResourceList{"memory": "20Ei"} }, "spec.containers[0].resources.limits.memory"},
		{"memory overflow decimal", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"memory": "1e19"} }, "spec.containers[0].resources.requests.memory"},
		{"second container", func(p *api.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "d", Image: "img",
				Resources: api.ResourceRequirements{Limits: api.ResourceList{"cpu": "1e19"}}})
		}, "spec.containers[1].resources.limits.cpu"},
	}
	for _, tc := range tests {
		p := validPod()
		tc.edit(p)
		err := Object(api.PodsResource, p)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errdefs.IsInvalid(err) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: got %v (field %q), want Invalid on %s", tc.name, err, errdefs.Field(err), tc.field)
		}
	}
}

func TestReplicaSetAndService(t *testing.T) {
	rs := &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "rs", Namespace: "default"},
		Spec: api.ReplicaSetSpec{Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "b"}},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}}}}
	Default(api.ReplicaSetsResource, rs)
	if *rs.Spec.Replicas != 1 {
		t.Errorf("default replicas %d", *rs.Spec.Replicas)
	}
	if err := Object(api.ReplicaSetsResource, rs); errdefs.Field(err) != "spec.template.metadata.labels" {
		t.Errorf("selector mismatch: %v", err)
	}
	rs.Spec.Selector = nil
	if err := Object(api.ReplicaSetsResource, rs); errdefs.Field(err) != "spec.selector" {
		t.Errorf("missing selector: %v", err)
	}

	svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: "s", Namespace: "default"},
		Spec: api.ServiceSpec{Ports: []api.ServicePort{{Port: 80, TargetPort: "http"}}}}
	Default(api.ServicesResource, svc)
	if err := Object(api.ServicesResource, svc); err != nil {
		t.Errorf("valid service: %v", err)
	}
	svc.Spec.ClusterIP = "300.1.1.1"
	if err := Object(api.ServicesResource, svc); errdefs.Field(err) != "spec.clusterIP" {
		t.Errorf("bad cluster IP: %v", err)
	}
	svc.Spec.ClusterIP = ""
	svc.Spec.Ports = append(svc.Spec.Ports, api.ServicePort{Port: 80, Protocol: "TCP"})
	if err := Object(api.ServicesResource, svc); errdefs.Field(err) != "spec.ports[1].port" {
		t.Errorf("duplicate port: %v", err)
	}
}

func TestNodeCapacity(t *testing.T) {
	tests := []struct {
		name     string
		capacity api.ResourceList
		field    string
	}{
		{"valid", api.ResourceList{"cpu": "4", "memory": "16Gi", "pods": "110"}, ""},
		{"cpu overflow", api.ResourceList{"cpu": "1e19"}, "status.capacity.cpu"},
		{"memory overflow", api.ResourceList{"memory": "20Ei"}, "status.capacity.memory"},
		{"pods overflow", api.ResourceList{"pods": "1e19"}, "status.capacity.pods"},
		{"bad memory", api.ResourceList{"memory": "lots"}, "status.capacity.memory"},
	}
	for _, tc := range tests {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n1"}, Status: api.NodeStatus{Capacity: tc.capacity}}
		err := Object(api.NodesResource, n)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errdefs.IsInvalid(err) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: got %v (field %q), want Invalid on %s", tc.name, err, errdefs.Field(err), tc.field)
		}
	}
}
