package function

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"

	"minik8s/pkg/api"
)

// Warm generic pods: the warm pool controller keeps a few pods of each
// Python runtime, in each namespace that has Python functions, on each
// ready node, running a generic funcserver that no function was handed
// yet. On a call that finds no pod of its function ready, a runner hands
// one of them the function on its specialise port, calls it at once and
// relabels it as the function's (ClaimLabels); the function's ReplicaSet
// then adopts it. A pod never leaves its namespace, so a function's code
// runs only with its own namespace's service account.
const (
	// LabelWarm marks a warm generic pod, with WarmRuntime(runtime) as its
	// value (an image is no label value). The claim removes it.
	LabelWarm = "minik8s.io/warm"
	// AnnotationClaimed is when a runner claimed a warm pod (RFC 3339):
	// the function controller removes claimed pods no ReplicaSet adopted
	// after a while.
	AnnotationClaimed = "minik8s.io/claimed-at"
	// WarmTimeoutSeconds bounds the call timeout of the functions a warm
	// pod can serve: its grace period, fixed at its creation, must let
	// their calls finish (a function with a longer timeout takes the path
	// of its own pods).
	WarmTimeoutSeconds = 900
)

// WarmRuntime is the LabelWarm value of the warm pods of runtime.
func WarmRuntime(runtime string) string {
	sum := sha256.Sum256([]byte(runtime))
	return hex.EncodeToString(sum[:])[:16]
}

// CanUseWarm says whether f's pods may be warm generic ones: a Python
// function (an image function brings its own server) whose calls fit in a
// warm pod's grace period, and that asks for no resources of its own
// (warm pods have none, and a pod's resources are fixed).
func CanUseWarm(f *api.Func) bool {
	r := f.Spec.Resources
	return f.Spec.Image == "" && TimeoutSeconds(&f.Spec) <= WarmTimeoutSeconds && (r == nil || len(r.Requests)+len(r.Limits) == 0)
}

// WarmPodSpec is the spec of a warm generic pod of runtime: the same
// server, port and probes as a function's own pod (PodSpec), started with
// --generic, its code dir an emptyDir the specialisation writes, and a
// second port, only function runners' TLS clients may use, to hand it
// its function.
func WarmPodSpec(runtime string) api.PodSpec {
	grace := int64(WarmTimeoutSeconds + 5)
	c := api.Container{
		Name:    "funcserver",
		Image:   runtime,
		Command: []string{RuntimeBinary, "--generic"},
		Env: []api.EnvVar{{Name: "FUNC_CODE_DIR", Value: CodeDir},
			// The kubelet names each named port's number PORT_<NAME>.
			{Name: "SPECIALIZE_PORT", Value: "$(PORT_SPECIALIZE)"}},
		Ports: []api.ContainerPort{{Name: PortName, Protocol: "TCP"}, {Name: SpecializePortName, Protocol: "TCP"}},
		ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/readyz", Port: PortName},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1},
		LivenessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/healthz", Port: PortName},
			InitialDelaySeconds: 5, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3},
		VolumeMounts: []api.VolumeMount{{Name: "code", MountPath: CodeDir}},
	}
	return api.PodSpec{
		RestartPolicy:                 api.RestartPolicyAlways,
		TerminationGracePeriodSeconds: &grace,
		Containers:                    []api.Container{c},
		Volumes:                       []api.Volume{{Name: "code", EmptyDir: &api.EmptyDirVolumeSource{}}},
	}
}

// IsWarmPodSpec says whether spec runs what WarmPodSpec(runtime) runs:
// the runtime image's funcserver --generic alone, with its env, and its
// code dir an emptyDir and nothing else mounted. A runner hands a function
// (its code, then its calls) only to such a pod: labels are anyone's who
// may create pods in the namespace, but a pod of this spec runs the
// platform's server, whoever made it.
func IsWarmPodSpec(spec *api.PodSpec, runtime string) bool {
	want := WarmPodSpec(runtime)
	w := want.Containers[0]
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 || len(spec.EphemeralContainers) != 0 || len(spec.Volumes) != 1 {
		return false
	}
	c := spec.Containers[0]
	v := spec.Volumes[0]
	return c.Image == w.Image && slices.Equal(c.Command, w.Command) && len(c.Args) == 0 &&
		slices.Equal(c.Env, w.Env) && len(c.EnvFrom) == 0 && reflect.DeepEqual(c.VolumeMounts, w.VolumeMounts) &&
		v.EmptyDir != nil && reflect.DeepEqual(v, api.Volume{Name: want.Volumes[0].Name, EmptyDir: v.EmptyDir})
}

// ClaimLabels are the labels of a warm pod once claimed for f: f's own
// pods' (PodTemplate), with the pod's other labels kept and LabelWarm
// removed.
func ClaimLabels(cur map[string]string, f *api.Func) map[string]string {
	out := make(map[string]string, len(cur)+2)
	for k, v := range cur {
		if k != LabelWarm {
			out[k] = v
		}
	}
	for k, v := range PodTemplate(f).Labels {
		out[k] = v
	}
	return out
}
