package admission

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/rbac"
)

var (
	editor = rbac.User{Name: "editor", Groups: []string{rbac.AllAuthenticated}}
	admin  = rbac.User{Name: "admin", Groups: []string{rbac.Masters, rbac.AllAuthenticated}}
)

// allows grants pods/privileged to the masters alone, as the built-in
// policy does (the apiserver's TestAdmitPodSpecs judges with that policy).
func allows(a rbac.Attributes) bool { return slices.Contains(a.User.Groups, rbac.Masters) }

// TestPodSpecsOfFunc: a Func's pods are derived from its spec; admission
// judges them as written out.
func TestPodSpecsOfFunc(t *testing.T) {
	f := &api.Func{ObjectMeta: api.ObjectMeta{Name: "f", Namespace: "default"}, Spec: api.FuncSpec{Image: "img"}}
	specs := PodSpecsOf(f)
	want := function.PodSpec(f)
	if len(specs) != 1 || !samePodSpec(specs[0].Spec, &want) {
		t.Fatalf("PodSpecsOf(func) = %+v, want function.PodSpec", specs)
	}
}

// TestPrivilegesCoverThePodSpec fails when PodSpec, Container, Volume or
// ContainerPort gain a field nobody has judged: each field is either one
// privileges() reports or one known not to reach into the node.
func TestPrivilegesCoverThePodSpec(t *testing.T) {
	judged := map[reflect.Type][]string{
		reflect.TypeOf(api.PodSpec{}): {"InitContainers", "Containers", "Volumes", "RestartPolicy", "NodeName", "NodeSelector",
			"TerminationGracePeriodSeconds", "SchedulerName", "HostNetwork", "ServiceAccountName", "AutomountServiceAccountToken",
			// The pod's own resolv.conf, written by the kubelet at a fixed
			// path in the pod's directory: validated as Kubernetes does
			// (nameservers are IPs, searches DNS names); Default copies the
			// node's resolver, which Kubernetes mounts into any pod too.
			"DNSPolicy", "DNSConfig",
			// The pod's own host name (its UTS namespace) and /etc/hosts,
			// written like its resolv.conf: names only the pod resolves.
			"Hostname", "Subdomain", "HostAliases",
			// Pod Security's baseline judges the security context (seccomp
			// Unconfined, unsafe sysctls); validation refuses the host
			// namespaces and what the kubelet does not do.
			"SecurityContext", "HostPID", "HostIPC", "ShareProcessNamespace",
			// Where the scheduler places the pod, among the nodes it may
			// use anyway: nothing on the node.
			"Tolerations", "Affinity", "TopologySpreadConstraints", "PriorityClassName", "Priority", "PreemptionPolicy",
			"SchedulingGates", "SchedulingGroup",
			// Refused when set (validation's notacted.go): the pod would run
			// other than asked.
			"RuntimeClassName", "Overhead", "ReadinessGates", "ResourceClaims", "Resources", "HostUsers", "HostnameOverride",
			"SetHostnameAsFQDN", "EphemeralContainers", "EvictionResponders", "ActiveDeadlineSeconds",
			// Stored, not acted on: nothing reaches the node.
			"OS", "EnableServiceLinks", "ImagePullSecrets",
			// The old name of serviceAccountName, defaulted into it: the
			// same service account of the pod's own namespace.
			"ServiceAccount"},
		reflect.TypeOf(api.Container{}): {"Name", "Image", "Command", "Args", "WorkingDir", "Env", "Ports", "Resources",
			"VolumeMounts", "ReadinessProbe", "LivenessProbe", "ImagePullPolicy",
			// Probes and hooks reach the pod's own address; one that names
			// another host is Pod Security baseline's (hostProbesAndHostLifecycle).
			"StartupProbe", "Lifecycle",
			// A file of the pod's own dir, mounted in the container.
			"TerminationMessagePath", "TerminationMessagePolicy",
			// privileged, added capabilities beyond the default set,
			// seccomp Unconfined: Pod Security's baseline.
			"SecurityContext",
			// Keys of the pod's own namespace's ConfigMaps and Secrets, as
			// env's valueFrom reads them.
			"EnvFrom",
			// Stored, not acted on (no terminal, no standard input, no
			// resizing in place); sidecars and block devices refused.
			"ResizePolicy", "Stdin", "StdinOnce", "TTY", "RestartPolicy", "RestartPolicyRules", "VolumeDevices"},
		// DownwardAPI: the pod's own fields, written in its own dir.
		// Projected: the same, and tokens of the pod's own service account
		// (of the audiences it names: a node asks no other, satoken.go).
		// PersistentVolumeClaim: a claim of the pod's own namespace, whose
		// volume's directory a cluster admin's volume or the provisioner
		// names, not the pod.
		reflect.TypeOf(api.Volume{}):        {"Name", "EmptyDir", "HostPath", "ConfigMap", "Secret", "DownwardAPI", "Projected", "PersistentVolumeClaim"},
		reflect.TypeOf(api.ContainerPort{}): {"Name", "ContainerPort", "HostPort", "Protocol", "HostIP"},
	}
	for typ, fields := range judged {
		for i := 0; i < typ.NumField(); i++ {
			if name := typ.Field(i).Name; !slices.Contains(fields, name) {
				t.Errorf("%s.%s is new: judge whether it reaches into the node (privileges) and list it here", typ.Name(), name)
			}
		}
	}
	for _, tc := range []struct {
		name string
		spec api.PodSpec
		want string
	}{
		{"plain", api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i", Ports: []api.ContainerPort{{ContainerPort: 80}}}},
			Volumes: []api.Volume{{Name: "e", EmptyDir: &api.EmptyDirVolumeSource{}}}}, ""},
		{"host network", api.PodSpec{HostNetwork: true}, "hostNetwork"},
		{"host path", api.PodSpec{Volumes: []api.Volume{{Name: "v", HostPath: &api.HostPathVolumeSource{Path: "/"}}}}, `hostPath volume "v" (/)`},
		{"host port", api.PodSpec{Containers: []api.Container{{Name: "c", Ports: []api.ContainerPort{{ContainerPort: 80, HostPort: 8080}}}}},
			`host port 8080 of container "c"`},
		{"init container's host port", api.PodSpec{InitContainers: []api.Container{{Name: "i", Ports: []api.ContainerPort{{ContainerPort: 80, HostPort: 8081}}}},
			Containers: []api.Container{{Name: "c"}}}, `host port 8081 of container "i"`},
		{"privileged init container", api.PodSpec{InitContainers: []api.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}},
			Containers: []api.Container{{Name: "c"}}}, `privileged (container "i" must not set securityContext.privileged=true)`},
		{"lifecycle hook on another host", api.PodSpec{Containers: []api.Container{{Name: "c", Lifecycle: &corev1.Lifecycle{
			PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "192.0.2.1", Port: intstr.FromInt32(80)}}}}}},
			`probe or lifecycle host (container "c" uses probe or lifecycle host "192.0.2.1")`},
		{"probe on another host", api.PodSpec{Containers: []api.Container{{Name: "c", ReadinessProbe: &api.Probe{
			TCPSocket: &api.TCPSocketAction{Host: "192.0.2.1", Port: "80"}}}}},
			`probe or lifecycle host (container "c" uses probe or lifecycle host "192.0.2.1")`},
		{"restricted", api.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(1000)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []api.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
				ReadOnlyRootFilesystem: ptr(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE", "CHOWN"}}}}}}, ""},
		{"privileged container", api.PodSpec{Containers: []api.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}},
			`privileged (container "c" must not set securityContext.privileged=true)`},
		{"added capability", api.PodSpec{Containers: []api.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}}}},
			`non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
		{"unconfined seccomp", api.PodSpec{SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			Containers: []api.Container{{Name: "c"}}},
			`seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`},
		{"unsafe sysctl", api.PodSpec{SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}},
			Containers: []api.Container{{Name: "c"}}},
			`forbidden sysctls (kernel.msgmax)`},
	} {
		if got := strings.Join(privileges(&tc.spec), ", "); got != tc.want {
			t.Errorf("%s: privileges %q, want %q", tc.name, got, tc.want)
		}
	}
}

// plant fills every api.PodSpec a value of v's type can hold (allocating
// pointers, one element of each list and map on the way) with a spec on
// the host network, and returns the JSON paths it planted at. It is this
// test's own walk, independent of PodSpecsOf, so that a kind whose pod
// template the admission does not see fails here.
func plant(v reflect.Value, path string, onPath map[reflect.Type]bool) []string {
	t := v.Type()
	if t == podSpecType {
		v.Set(reflect.ValueOf(api.PodSpec{HostNetwork: true, Containers: []api.Container{{Name: "c", Image: "i"}}}))
		return []string{path}
	}
	if onPath[t] {
		return nil
	}
	onPath[t] = true
	defer delete(onPath, t)
	switch t.Kind() {
	case reflect.Pointer:
		e := reflect.New(t.Elem())
		if got := plant(e.Elem(), path, onPath); len(got) > 0 {
			v.Set(e)
			return got
		}
	case reflect.Slice:
		e := reflect.New(t.Elem()).Elem()
		if got := plant(e, path+"[0]", onPath); len(got) > 0 {
			v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), e))
			return got
		}
	case reflect.Map:
		e := reflect.New(t.Elem()).Elem()
		k := reflect.New(t.Key()).Elem()
		if k.Kind() == reflect.String {
			k.SetString("k")
		}
		if got := plant(e, fmt.Sprintf("%s[%v]", path, k), onPath); len(got) > 0 {
			m := reflect.MakeMap(t)
			m.SetMapIndex(k, e)
			v.Set(m)
			return got
		}
	case reflect.Struct:
		var out []string
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				out = append(out, plant(v.Field(i), fieldPath(path, f), onPath)...)
			}
		}
		return out
	}
	return nil
}

// TestEveryPodTemplateIsAdmitted walks every kind the apiserver serves:
// wherever its type can hold a pod spec, a privileged one is planted, and
// admission must see each and refuse the edit user. The kinds known to
// carry templates must be among them (so the walk itself works).
func TestEveryPodTemplateIsAdmitted(t *testing.T) {
	var carrying []string
	for _, res := range api.Resources {
		obj := res.New()
		obj.GetObjectMeta().Name, obj.GetObjectMeta().Namespace = "x", "default"
		planted := plant(reflect.ValueOf(obj).Elem(), "", map[reflect.Type]bool{})
		found := map[string]bool{}
		for _, at := range PodSpecsOf(obj) {
			if at.Spec.HostNetwork {
				found[at.Path] = true
			}
		}
		for _, p := range planted {
			if !found[p] {
				t.Errorf("%s: the pod spec at %s is not seen by admission (PodSpecsOf)", res.Kind, p)
			}
		}
		if len(planted) == 0 {
			continue
		}
		carrying = append(carrying, res.Name)
		err := PodSpecs(res, editor, allows, nil, obj)
		if !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "hostNetwork") {
			t.Errorf("%s with privileged specs at %v, written by an edit user: %v, want forbidden", res.Kind, planted, err)
		}
		if err := PodSpecs(res, admin, allows, nil, obj); err != nil {
			t.Errorf("%s written by the admin: %v", res.Kind, err)
		}
	}
	for _, want := range []string{"pods", "replicasets", "deployments", "jobs", "cronjobs"} {
		if !slices.Contains(carrying, want) {
			t.Errorf("the walk found no pod spec in %s (found in %v)", want, carrying)
		}
	}
}
func ptr[T any](v T) *T { return &v }
