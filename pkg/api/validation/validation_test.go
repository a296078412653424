package validation

import (
	"encoding/base64"
	"fmt"
	"math"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
)

// names says what is wrong when errs does not name want ("" for none).
func names(errs field.ErrorList, want string) string {
	if want == "" {
		if len(errs) > 0 {
			return fmt.Sprintf("valid object refused: %v", errs)
		}
		return ""
	}
	for _, e := range errs {
		if e.Field == want {
			return ""
		}
	}
	return fmt.Sprintf("got %v, want an error on %s", errs, want)
}

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
		{"file over function.py", func(f *api.Func) { f.Spec.Files = map[string]string{"function.py": code} }, "spec.files[function.py]"},
		{"file not base64", func(f *api.Func) { f.Spec.Files = map[string]string{"util.py": "%%"} }, "spec.files[util.py]"},
		{"file bad name", func(f *api.Func) { f.Spec.Files = map[string]string{"a/b.py": code} }, "spec.files[a/b.py]"},
		{"bad left", func(f *api.Func) { f.Spec.Left = "no good" }, "spec.left"},
		{"right template", func(f *api.Func) { f.Spec.Right = "template" }, "spec.right"},
		{"bad address", func(f *api.Func) { f.Spec.ServiceAddress = "nowhere" }, "spec.serviceAddress"},
		{"traffic split", func(f *api.Func) {
			f.Spec.Traffic = []api.FuncTrafficTarget{{Revision: 1, Percent: 90}, {Latest: true, Percent: 10}}
		}, ""},
		{"traffic short of 100", func(f *api.Func) { f.Spec.Traffic = []api.FuncTrafficTarget{{Revision: 1, Percent: 90}} }, "spec.traffic"},
		{"traffic with no target", func(f *api.Func) { f.Spec.Traffic = []api.FuncTrafficTarget{{Percent: 100}} }, "spec.traffic[0].revision"},
		{"traffic twice to one revision", func(f *api.Func) {
			f.Spec.Traffic = []api.FuncTrafficTarget{{Revision: 1, Percent: 50}, {Revision: 1, Percent: 50}}
		}, "spec.traffic[1].revision"},
		{"traffic latest and a number", func(f *api.Func) {
			f.Spec.Traffic = []api.FuncTrafficTarget{{Revision: 1, Latest: true, Percent: 100}}
		}, "spec.traffic[0]"},
		{"traffic over 100", func(f *api.Func) {
			f.Spec.Traffic = []api.FuncTrafficTarget{{Revision: 1, Percent: 150}, {Latest: true, Percent: -50}}
		}, "spec.traffic[0].percent"},
		{"traffic of a v1 function", func(f *api.Func) {
			f.APIVersion, f.Spec.Traffic = "v1", []api.FuncTrafficTarget{{Latest: true, Percent: 100}}
		}, "spec.traffic"},
		{"negative min", func(f *api.Func) { f.Spec.MinInstanceNum = ptr(-1) }, "spec.minInstanceNum"},
		{"min > max", func(f *api.Func) { f.Spec.MinInstanceNum, f.Spec.MaxInstanceNum = ptr(3), ptr(2) }, "spec.minInstanceNum"},
		{"init > max", func(f *api.Func) { f.Spec.InitInstanceNum, f.Spec.MaxInstanceNum = ptr(3), ptr(2) }, "spec.initInstanceNum"},
		{"init < min", func(f *api.Func) {
			f.Spec.InitInstanceNum, f.Spec.MinInstanceNum, f.Spec.MaxInstanceNum = ptr(1), ptr(2), ptr(4)
		}, "spec.initInstanceNum"},
		{"max 0", func(f *api.Func) { f.Spec.MaxInstanceNum = ptr(0) }, "spec.maxInstanceNum"},
		{"timeout", func(f *api.Func) { f.Spec.TimeoutSeconds = ptr(0) }, "spec.timeoutSeconds"},
		{"outputs", func(f *api.Func) {
			f.Spec.Outputs = []api.FuncOutput{{Name: "audit", Function: "audit"}, {Name: "orders", Subject: "orders.new"}, {Name: "hook", URL: "https://example.com/x"}}
		}, ""},
		{"output with two targets", func(f *api.Func) {
			f.Spec.Outputs = []api.FuncOutput{{Name: "a", Function: "audit", Subject: "x"}}
		}, "spec.outputs[0]"},
		{"output without a target", func(f *api.Func) { f.Spec.Outputs = []api.FuncOutput{{Name: "a"}} }, "spec.outputs[0]"},
		{"output named twice", func(f *api.Func) {
			f.Spec.Outputs = []api.FuncOutput{{Name: "a", Function: "x"}, {Name: "a", Function: "y"}}
		}, "spec.outputs[1].name"},
		{"output bad name", func(f *api.Func) { f.Spec.Outputs = []api.FuncOutput{{Name: "A b", Function: "x"}} }, "spec.outputs[0].name"},
		{"output to RETURN", func(f *api.Func) { f.Spec.Outputs = []api.FuncOutput{{Name: "a", Function: "RETURN"}} }, "spec.outputs[0].function"},
		{"output system subject", func(f *api.Func) { f.Spec.Outputs = []api.FuncOutput{{Name: "a", Subject: "$JS.API.x"}} }, "spec.outputs[0].subject"},
		{"output ftp url", func(f *api.Func) { f.Spec.Outputs = []api.FuncOutput{{Name: "a", URL: "ftp://x/y"}} }, "spec.outputs[0].url"},
		{"idle timeout", func(f *api.Func) { f.Spec.IdleTimeoutSeconds = ptr(300) }, ""},
		{"idle timeout 0", func(f *api.Func) { f.Spec.IdleTimeoutSeconds = ptr(0) }, "spec.idleTimeoutSeconds"},
		{"config", func(f *api.Func) { f.Spec.Config = map[string]string{"db.url": "x", "LEVEL": "debug"} }, ""},
		{"config bad key", func(f *api.Func) { f.Spec.Config = map[string]string{"a b": "x"} }, "spec.config[a b]"},
		{"resources", func(f *api.Func) {
			f.Spec.Resources = &api.ResourceRequirements{Requests: api.ResourceList{"cpu": "250m", "memory": "64Mi"},
				Limits: api.ResourceList{"cpu": "1", "memory": "64Mi"}}
		}, ""},
		{"resources bad quantity", func(f *api.Func) {
			f.Spec.Resources = &api.ResourceRequirements{Limits: api.ResourceList{"memory": "64 MB"}}
		}, "spec.resources.limits[memory]"},
		{"resources negative", func(f *api.Func) {
			f.Spec.Resources = &api.ResourceRequirements{Requests: api.ResourceList{"cpu": "-1"}}
		}, "spec.resources.requests[cpu]"},
		{"resources unknown", func(f *api.Func) {
			f.Spec.Resources = &api.ResourceRequirements{Limits: api.ResourceList{"nvidia.com/gpu": "1"}}
		}, "spec.resources.limits[nvidia.com/gpu]"},
		{"request above limit", func(f *api.Func) {
			f.Spec.Resources = &api.ResourceRequirements{Requests: api.ResourceList{"memory": "128Mi"}, Limits: api.ResourceList{"memory": "64Mi"}}
		}, "spec.resources.requests[memory]"},
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
		errs := Object(api.FuncsResource, f)
		if msgs := NameFunc(api.FuncsResource)(f.Name, false); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), f.Name, msgs[0]))
		}
		if err := names(errs, tc.field); err != "" {
			t.Errorf("%s: %s", tc.name, err)
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

// TestPod: what minik8s refuses in a pod beyond Kubernetes' rules (which
// apiserver's TestValidationOfEveryKind walks).
func TestPod(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(p *api.Pod)
		field string
	}{
		{"valid", func(p *api.Pod) {}, ""},
		{"image containerd cannot pull", func(p *api.Pod) { p.Spec.Containers[0].Image = "Web Server" }, "spec.containers[0].image"},
		{"padded image is Kubernetes'", func(p *api.Pod) { p.Spec.Containers[0].Image = "img\n" }, ""},
		{"bad cpu", func(p *api.Pod) { p.Spec.Containers[0].Resources.Limits = api.ResourceList{"cpu": "fast"} }, "spec.containers[0].resources.limits[cpu]"},
		{"bad memory", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"memory": "64Zi"} }, "spec.containers[0].resources.requests[memory]"},
		{"udp", func(p *api.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "UDP" }, "spec.containers[0].ports[0].protocol"},
		{"IPv6 host IP", func(p *api.Pod) {
			p.Spec.Containers[0].Ports[0].HostPort, p.Spec.Containers[0].Ports[0].HostIP = 8080, "fd00::1"
		}, "spec.containers[0].ports[0].hostIP"},
		{"relative hostPath", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "v", HostPath: &api.HostPathVolumeSource{Path: "x"}}}
		}, "spec.volumes[0].hostPath.path"},
		{"relative mount", func(p *api.Pod) {
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "v", MountPath: "v"}}
		}, "spec.containers[0].volumeMounts[0].mountPath"},
		{"probe by name", func(p *api.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &api.Probe{HTTPGet: &api.HTTPGetAction{Port: "http"}}
		}, ""},
		{"probe unknown port", func(p *api.Pod) {
			p.Spec.Containers[0].LivenessProbe = &api.Probe{HTTPGet: &api.HTTPGetAction{Port: "nope"}}
		}, "spec.containers[0].livenessProbe.httpGet.port"},
		{"resources", func(p *api.Pod) {
			p.Spec.Containers[0].Resources.Limits = api.ResourceList{"cpu": "500m", "memory": "7Ei"}
			p.Spec.Containers[0].Resources.Requests = api.ResourceList{"cpu": "0.1m", "memory": "64Mi"}
		}, ""},
		{"negative cpu is Kubernetes'", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"cpu": "-1"} }, ""},
		// Quantities beyond int64 are errors, not wrapped or saturated values.
		{"cpu overflow", func(p *api.Pod) { p.Spec.Containers[0].Resources.Limits = api.ResourceList{"cpu": "1e19"} }, "spec.containers[0].resources.limits[cpu]"},
		{"cpu overflow request", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"cpu": "10Ei"} }, "spec.containers[0].resources.requests[cpu]"},
		{"memory overflow", func(p *api.Pod) { p.Spec.Containers[0].Resources.Limits = api.ResourceList{"memory": "20Ei"} }, "spec.containers[0].resources.limits[memory]"},
		{"memory overflow decimal", func(p *api.Pod) { p.Spec.Containers[0].Resources.Requests = api.ResourceList{"memory": "1e19"} }, "spec.containers[0].resources.requests[memory]"},
		{"memory emptyDir", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "m", EmptyDir: &api.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}
		}, ""},
		{"huge pages emptyDir", func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "m", EmptyDir: &api.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}}}
		}, "spec.volumes[0].emptyDir.medium"},
		// Confinement and sharing minik8s does not do are refused, not ignored.
		{"host PID", func(p *api.Pod) { p.Spec.HostPID = true }, "spec.hostPID"},
		{"host IPC", func(p *api.Pod) { p.Spec.HostIPC = true }, "spec.hostIPC"},
		{"shared PID namespace", func(p *api.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }, "spec.shareProcessNamespace"},
		{"own PID namespace said", func(p *api.Pod) { p.Spec.ShareProcessNamespace = ptr(false) }, ""},
		{"localhost seccomp", func(p *api.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
		}, "spec.securityContext.seccompProfile.type"},
		{"runtime default seccomp, users, groups, sysctls", func(p *api.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000)), FSGroup: ptr(int64(2000)), SupplementalGroups: []int64{3000},
				Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}}
		}, ""},
		{"SELinux label", func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1"}}
		}, "spec.containers[0].securityContext.seLinuxOptions"},
		{"AppArmor profile", func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
		}, "spec.containers[0].securityContext.appArmorProfile.type"},
		{"unmasked proc", func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}
		}, "spec.containers[0].securityContext.procMount"},
		{"Windows host process", func(p *api.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr(true)}}
		}, "spec.securityContext.windowsOptions.hostProcess"},
		{"container confinement minik8s does", func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
				ProcMount:    ptr(corev1.DefaultProcMount), AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
		}, ""},
		// The rest of Kubernetes' pod spec: accepted when minik8s does it
		// or doing nothing is safe, refused when the pod would run other
		// than asked (notacted.go).
		{"tolerations, preferences, priority, pull secrets", func(p *api.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1}}}}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
			p.Spec.PriorityClassName, p.Spec.Priority = "high", ptr(int32(10))
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
			p.Spec.OS, p.Spec.HostUsers, p.Spec.SetHostnameAsFQDN = &corev1.PodOS{Name: corev1.Linux}, ptr(true), ptr(false)
			p.Spec.Containers[0].TTY, p.Spec.Containers[0].Stdin = true, true
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "v", MountPath: "/v", SubPathExpr: "$(POD)",
				MountPropagation: ptr(corev1.MountPropagationNone), RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyIfPossible)}}
		}, ""},
		{"runtime class", func(p *api.Pod) { p.Spec.RuntimeClassName = ptr("gvisor") }, "spec.runtimeClassName"},
		{"readiness gates", func(p *api.Pod) { p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "x"}} }, "spec.readinessGates"},
		{"user namespaces", func(p *api.Pod) { p.Spec.HostUsers = ptr(false) }, "spec.hostUsers"},
		{"pod resources", func(p *api.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": resource.MustParse("1Gi")}}
		}, "spec.resources"},
		{"deadline", func(p *api.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(5)) }, "spec.activeDeadlineSeconds"},
		{"required pod anti-affinity", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "h"}}}}
		}, ""}, // the scheduler honours it
		{"pod affinity in every namespace", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "h",
				NamespaceSelector: &metav1.LabelSelector{}}}}}
		}, "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector"},
		{"pod anti-affinity in another namespace", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "h",
				Namespaces: []string{"b"}}}}}
		}, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces"},
		{"preferred pod affinity in every namespace", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 5,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "h", NamespaceSelector: &metav1.LabelSelector{}}}}}}
		}, "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector"},
		{"preferred pod anti-affinity in another namespace", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 5,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "h", Namespaces: []string{"b"}}}}}}
		}, "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaces"},
		{"preferred pod anti-affinity in its own namespace", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 5,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "h", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}}}}
		}, ""}, // the scheduler weighs it
		{"hard spread", func(p *api.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}, ""}, // the scheduler spreads by it
		{"windows", func(p *api.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }, "spec.os.name"},
		{"sidecar", func(p *api.Pod) { p.Spec.Containers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways) }, "spec.containers[0].restartPolicy"},
		{"block device", func(p *api.Pod) {
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "d", DevicePath: "/dev/x"}}
		}, "spec.containers[0].volumeDevices"},
		{"mount propagation", func(p *api.Pod) {
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "v", MountPath: "/v", MountPropagation: ptr(corev1.MountPropagationBidirectional)}}
		}, "spec.containers[0].volumeMounts[0].mountPropagation"},
		{"recursive read-only", func(p *api.Pod) {
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "v", MountPath: "/v", RecursiveReadOnly: ptr(corev1.RecursiveReadOnlyEnabled)}}
		}, "spec.containers[0].volumeMounts[0].recursiveReadOnly"},
		{"file key", func(p *api.Pod) {
			p.Spec.Containers[0].Env = []api.EnvVar{{Name: "X", ValueFrom: &api.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{Key: "k"}}}}
		}, "spec.containers[0].env[0].valueFrom.fileKeyRef"},
		{"second container", func(p *api.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "d", Image: "img",
				Resources: api.ResourceRequirements{Limits: api.ResourceList{"cpu": "1e19"}}})
		}, "spec.containers[1].resources.limits[cpu]"},
	}
	for _, tc := range tests {
		p := validPod()
		tc.edit(p)
		if err := names(Object(api.PodsResource, p), tc.field); err != "" {
			t.Errorf("%s: %s", tc.name, err)
		}
	}
}

// TestTemplates: a template's pods are made by a controller, so what would
// refuse them refuses the template.
func TestTemplates(t *testing.T) {
	spec := api.PodSpec{Containers: []api.Container{{Name: "c", Image: "img\n"}}}
	for _, tc := range []struct {
		res   api.Resource
		obj   api.Object
		field string
	}{
		{api.ReplicaSetsResource, &api.ReplicaSet{Spec: api.ReplicaSetSpec{Template: api.PodTemplateSpec{Spec: spec}}}, "spec.template.spec.containers[0].image"},
		{api.DeploymentsResource, &api.Deployment{Spec: api.DeploymentSpec{Template: api.PodTemplateSpec{Spec: spec}}}, "spec.template.spec.containers[0].image"},
		{api.JobsResource, &api.Job{Spec: api.JobSpec{Template: api.PodTemplateSpec{Spec: spec}}}, "spec.template.spec.containers[0].image"},
		{api.CronJobsResource, &api.CronJob{Spec: api.CronJobSpec{JobTemplate: api.JobTemplateSpec{Spec: api.JobSpec{Template: api.PodTemplateSpec{Spec: spec}}}}},
			"spec.jobTemplate.spec.template.spec.containers[0].image"},
		{api.DeploymentsResource, &api.Deployment{Spec: api.DeploymentSpec{Template: api.PodTemplateSpec{
			ObjectMeta: api.ObjectMeta{Labels: map[string]string{api.LabelPodTemplateHash: "x"}}, Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}}}},
			"spec.template.metadata.labels[" + api.LabelPodTemplateHash + "]"},
	} {
		if err := names(Object(tc.res, tc.obj), tc.field); err != "" {
			t.Errorf("%s: %s", tc.res.Kind, err)
		}
	}
}

func TestServiceAndHPA(t *testing.T) {
	svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: "s", Namespace: "default"},
		Spec: api.ServiceSpec{Ports: []api.ServicePort{{Port: 80, TargetPort: "http"}}}}
	Default(api.ServicesResource, svc)
	if err := names(Object(api.ServicesResource, svc), ""); err != "" {
		t.Error(err)
	}
	svc.Spec.ClusterIP = "fd00::1"
	if err := names(Object(api.ServicesResource, svc), "spec.clusterIP"); err != "" {
		t.Error(err)
	}
	svc.Spec.ClusterIP, svc.Spec.Ports[0].Protocol = "", "SCTP"
	if err := names(Object(api.ServicesResource, svc), "spec.ports[0].protocol"); err != "" {
		t.Error(err)
	}

	h := &api.HorizontalPodAutoscaler{Spec: api.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
		ScaleTargetRef: api.CrossVersionObjectReference{Kind: "DaemonSet", Name: "s"}}}
	Default(api.HorizontalPodAutoscalersResource, h)
	if err := names(Object(api.HorizontalPodAutoscalersResource, h), "spec.scaleTargetRef.kind"); err != "" {
		t.Error(err)
	}
	h.Spec.ScaleTargetRef.Kind = "Deployment"
	h.Spec.Metrics[0].Resource.Name = "gpu"
	if err := names(Object(api.HorizontalPodAutoscalersResource, h), "spec.metrics[0].resource.name"); err != "" {
		t.Error(err)
	}
}

func TestNodeCapacity(t *testing.T) {
	tests := []struct {
		name     string
		capacity api.ResourceList
		field    string
	}{
		{"valid", api.ResourceList{"cpu": "4", "memory": "16Gi", "pods": "110"}, ""},
		{"cpu overflow", api.ResourceList{"cpu": "1e19"}, "status.capacity[cpu]"},
		{"memory overflow", api.ResourceList{"memory": "20Ei"}, "status.capacity[memory]"},
		{"pods overflow", api.ResourceList{"pods": "1e19"}, "status.capacity[pods]"},
		{"bad memory", api.ResourceList{"memory": "lots"}, "status.capacity[memory]"},
	}
	for _, tc := range tests {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n1"}, Status: api.NodeStatus{Capacity: tc.capacity}}
		if err := names(Object(api.NodesResource, n), tc.field); err != "" {
			t.Errorf("%s: %s", tc.name, err)
		}
	}
}

// The rest of Kubernetes' Service is defaulted as Kubernetes defaults it,
// and what would route other than the proxies do is refused.
func TestServiceFields(t *testing.T) {
	fresh := func() *api.Service {
		svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: "s", Namespace: "default"},
			Spec: api.ServiceSpec{Type: "NodePort", ClusterIPs: []string{"10.0.0.9"}, Ports: []api.ServicePort{{Port: 80, AppProtocol: ptr("h2c")}}}}
		Default(api.ServicesResource, svc)
		return svc
	}
	svc := fresh()
	if svc.Spec.ClusterIP != "10.0.0.9" || len(svc.Spec.IPFamilies) != 1 || svc.Spec.IPFamilies[0] != corev1.IPv4Protocol ||
		*svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster ||
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Fatalf("defaulted %+v", svc.Spec)
	}
	if err := names(Object(api.ServicesResource, svc), ""); err != "" {
		t.Error(err)
	}
	for _, tc := range []struct {
		edit  func(s *api.ServiceSpec)
		field string
	}{
		{func(s *api.ServiceSpec) { s.ClusterIPs = append(s.ClusterIPs, "fd00::9") }, "spec.clusterIPs"},
		{func(s *api.ServiceSpec) { s.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }, "spec.ipFamilies[0]"},
		{func(s *api.ServiceSpec) { s.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyRequireDualStack) }, "spec.ipFamilyPolicy"},
		{func(s *api.ServiceSpec) { s.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal) }, "spec.internalTrafficPolicy"},
		{func(s *api.ServiceSpec) { s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }, "spec.externalTrafficPolicy"},
		{func(s *api.ServiceSpec) { s.SessionAffinity = corev1.ServiceAffinityClientIP }, "spec.sessionAffinity"},
		{func(s *api.ServiceSpec) { s.ExternalIPs = []string{"192.0.2.1"} }, "spec.externalIPs"},
		{func(s *api.ServiceSpec) { s.Type = "LoadBalancer" }, "spec.type"},
		{func(s *api.ServiceSpec) { s.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} }, "spec.loadBalancerSourceRanges"},
		{func(s *api.ServiceSpec) { s.TrafficDistribution = ptr("PreferClose") }, ""},
	} {
		svc := fresh()
		tc.edit(&svc.Spec)
		if err := names(Object(api.ServicesResource, svc), tc.field); err != "" {
			t.Error(err)
		}
	}
}

// A Job's modes the controller does not run are refused; its defaults are
// the ones it runs.
func TestJobFields(t *testing.T) {
	spec := api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}
	j := &api.Job{Spec: api.JobSpec{Template: api.PodTemplateSpec{Spec: spec}}}
	Default(api.JobsResource, j)
	if *j.Spec.CompletionMode != batchv1.NonIndexedCompletion || *j.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Fatalf("defaulted %+v", j.Spec)
	}
	if err := names(Object(api.JobsResource, j), ""); err != "" {
		t.Error(err)
	}
	j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{}
	errs := Object(api.JobsResource, j)
	if names(errs, "spec.completionMode") != "" || names(errs, "spec.podFailurePolicy") != "" {
		t.Errorf("an indexed Job with a failure policy: %v", errs)
	}
	c := &api.CronJob{Spec: api.CronJobSpec{Schedule: "@daily", JobTemplate: api.JobTemplateSpec{Spec: api.JobSpec{Template: api.PodTemplateSpec{Spec: spec},
		ManagedBy: ptr("example.com/other")}}}}
	if err := names(Object(api.CronJobsResource, c), "spec.jobTemplate.spec.managedBy"); err != "" {
		t.Error(err)
	}
}

// A CronJob's schedule is read in its time zone.
func TestCronTimeZone(t *testing.T) {
	c := &api.CronJob{Spec: api.CronJobSpec{Schedule: "0 9 * * *", TimeZone: ptr("Asia/Shanghai")}}
	sched, err := CronSchedule(c)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, want := sched.Next(from).UTC(), time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next run %v, want %v (09:00 in Shanghai)", got, want)
	}
	for _, tz := range []string{"Mars/Olympus", "Local", ""} {
		c.Spec.TimeZone = ptr(tz)
		if _, err := CronSchedule(c); err == nil {
			t.Errorf("time zone %q accepted", tz)
		}
	}
}
