// Package function holds what the function controller, the apiserver's call
// path and the runtime agree on: the names and labels of the objects a
// function template owns, the pod that serves it, and the runtime's wire
// format.
package function

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

const (
	// LabelFunc carries the function's name on everything made for it.
	LabelFunc = "minik8s.io/func"
	// LabelCode carries the hash of the code a pod runs, so that pods
	// running old code can be told apart after an update.
	LabelCode = "minik8s.io/func-code"
	// LabelInstance marks a v1 step pod with its instance id.
	LabelInstance = "minik8s.io/func-instance"

	// CodeDir is where function pods mount their code.
	CodeDir = "/func"
	// FileFunction and FilePreRun are the ConfigMap keys (and file names).
	FileFunction = "function.py"
	FilePreRun   = "preRun.sh"

	// PortName names the runtime's port; Services target it by name since
	// every pod gets its own allocated port.
	PortName = "http"
	// ServicePort is the port of a function's Service on its cluster IP.
	ServicePort = 80

	// EnvPluginsPre and EnvPluginsPost name a pod's plugins, comma-separated.
	EnvPluginsPre  = "FUNC_PLUGINS_PRE"
	EnvPluginsPost = "FUNC_PLUGINS_POST"
	// EnvMemoryLimit is the container's memory limit in bytes, when it
	// has one (the downward API's limits.memory).
	EnvMemoryLimit = "FUNC_MEMORY_LIMIT"

	// RuntimeBinary is the funcserver inside the runtime image.
	RuntimeBinary = "/usr/local/bin/funcserver"
	// InvokePath is the runtime's call endpoint.
	InvokePath = "/invoke"
	// TimeoutHeader passes a call's timeout to the runtime.
	TimeoutHeader = "X-Func-Timeout-Seconds"
)

// ObjectName is the name of the ConfigMap, Service and ReplicaSet of a
// function (or of a revision's unit, NAME@N). Function names may hold '_'
// and capitals, object names may not; a hash of the original keeps two
// such names apart.
func ObjectName(fn string) string {
	s := strings.ToLower(strings.NewReplacer("_", "-", RevisionSep, "-").Replace(fn))
	if s == fn {
		return "func-" + s
	}
	h := fnv.New32a()
	h.Write([]byte(fn))
	return "func-" + s + "-" + strconv.FormatUint(uint64(h.Sum32()%(36*36*36*36*36)), 36)
}

// CodeHash identifies a version of a function's code. An image function's
// code is its image, which Runtime returns: a new image rolls its pods.
func CodeHash(spec *api.FuncSpec) string {
	h := sha256.New()
	h.Write([]byte(spec.Function))
	h.Write([]byte{0})
	h.Write([]byte(spec.PreRun))
	h.Write([]byte{0})
	h.Write([]byte(Runtime(spec)))
	if spec.ContainerConcurrency != nil {
		// The worker count is part of what a pod runs.
		fmt.Fprintf(h, "\x00%d", *spec.ContainerConcurrency)
	}
	// Only when set, so that a function without them keeps its hash.
	if p := spec.Plugins; p != nil && len(p.Pre)+len(p.Post) > 0 {
		fmt.Fprintf(h, "\x00plugins %q %q", p.Pre, p.Post)
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Files)) {
		fmt.Fprintf(h, "\x00file %q %s", name, spec.Files[name])
	}
	if r := spec.Resources; r != nil && len(r.Requests)+len(r.Limits) > 0 {
		// Resources are the pod's: a change makes new pods.
		fmt.Fprintf(h, "\x00resources %v %v", sortedList(r.Requests), sortedList(r.Limits))
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}

func sortedList(rl api.ResourceList) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(rl)) {
		out = append(out, k+"="+rl[k])
	}
	return out
}

// Runtime is the image a function runs in: its own for an image function,
// else the Python runtime.
func Runtime(spec *api.FuncSpec) string {
	if spec.Image != "" {
		return spec.Image
	}
	if spec.Runtime != "" {
		return spec.Runtime
	}
	return api.DefaultFuncRuntime
}

// TimeoutSeconds is the bound of one call of the function.
func TimeoutSeconds(spec *api.FuncSpec) int {
	if spec.TimeoutSeconds != nil {
		return *spec.TimeoutSeconds
	}
	return api.DefaultFuncTimeoutSeconds
}

// IsFunctionPod tells a pod serving a function (a pool's, a fresh step's
// or a warm generic one) by its labels: the kubelet fences such pods, which
// serve the platform only (runners and nodes), so that calls go through
// funcs/invoke.
func IsFunctionPod(labels map[string]string) bool {
	_, fn := labels[LabelFunc]
	_, warm := labels[LabelWarm]
	_, rev := labels[LabelRevisionOf]
	return fn || warm || rev
}

// Selector selects the pods serving a function, or a revision's unit.
func Selector(name string) map[string]string {
	return unitLabels(name)
}

// podLabels are the labels of f's pods and code: its selector and its
// code's hash.
func podLabels(f *api.Func) map[string]string {
	l := unitLabels(f.Name)
	l[LabelCode] = CodeHash(&f.Spec)
	return l
}

// CodeConfigMap is the ConfigMap that delivers a function's code to its pods.
// An image function has none to deliver: its ConfigMap holds empty files and
// no pod mounts it, which keeps the controller the same for every function
// (and empties the code of a function that became an image).
func CodeConfigMap(f *api.Func) (*api.ConfigMap, error) {
	code, err := base64.StdEncoding.DecodeString(f.Spec.Function)
	if err != nil {
		return nil, fmt.Errorf("spec.function: %w", err)
	}
	pre, err := base64.StdEncoding.DecodeString(f.Spec.PreRun)
	if err != nil {
		return nil, fmt.Errorf("spec.preRun: %w", err)
	}
	data := map[string]string{FileFunction: string(code), FilePreRun: string(pre)}
	for name, b64 := range f.Spec.Files {
		content, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("spec.files.%s: %w", name, err)
		}
		data[name] = string(content)
	}
	return &api.ConfigMap{
		TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: api.ObjectMeta{
			Name: ObjectName(f.Name), Namespace: f.Namespace,
			Labels:          podLabels(f),
			OwnerReferences: []api.OwnerReference{OwnerRef(f)},
		},
		Data: data,
	}, nil
}

// OwnerRef makes f the controlling owner of an object; a unit's owner is
// its revision.
func OwnerRef(f *api.Func) api.OwnerReference {
	yes := true
	if fn, n, _ := SplitTarget(f.Name); n != 0 {
		return api.OwnerReference{APIVersion: api.FuncGroupVersion, Kind: api.FuncRevisionsResource.Kind, Name: RevisionName(fn, n), UID: f.UID, Controller: &yes}
	}
	return api.OwnerReference{APIVersion: f.APIVersion, Kind: "Func", Name: f.Name, UID: f.UID, Controller: &yes}
}

// PodSpec is the spec of a pod serving f. A Python function runs
// funcserver in the runtime image with its code mounted from the ConfigMap;
// an image function runs its image's own entrypoint, with the same env,
// port and probes, since it serves the same contract (event.go).
func PodSpec(f *api.Func) api.PodSpec {
	timeout := TimeoutSeconds(&f.Spec)
	// The grace period lets a pod being removed finish the calls it serves.
	grace := int64(timeout + 5)
	python := f.Spec.Image == ""
	env := []api.EnvVar{{Name: "FUNC_NAME", Value: BaseName(f.Name)}}
	if python {
		env = append(env, api.EnvVar{Name: "FUNC_CODE_DIR", Value: CodeDir})
	}
	env = append(env, RuntimeEnv(f)[1:]...)
	c := api.Container{
		Name:  "funcserver",
		Image: Runtime(&f.Spec),
		Env:   env,
		Ports: []api.ContainerPort{{Name: PortName, Protocol: "TCP"}},
		ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/readyz", Port: PortName},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1},
		LivenessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/healthz", Port: PortName},
			InitialDelaySeconds: 5, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3},
	}
	if r := f.Spec.Resources; r != nil {
		c.Resources = api.ResourceRequirements{Requests: maps.Clone(r.Requests), Limits: maps.Clone(r.Limits)}
		if _, ok := r.Limits[api.ResourceMemory]; ok {
			// The runtime reports it as context["memory-limit"]: the
			// cgroup's own file is not in the container's view.
			c.Env = append(c.Env, api.EnvVar{Name: EnvMemoryLimit,
				ValueFrom: &api.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}})
		}
	}
	spec := api.PodSpec{RestartPolicy: api.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace}
	if python {
		c.Command = []string{RuntimeBinary}
		c.VolumeMounts = []api.VolumeMount{{Name: "code", MountPath: CodeDir, ReadOnly: true}}
		spec.Volumes = []api.Volume{{Name: "code", ConfigMap: &api.ConfigMapVolumeSource{Name: ObjectName(f.Name)}}}
	}
	spec.Containers = []api.Container{c}
	return spec
}

// RuntimeEnv is what the runtime is told of f besides its code: its name,
// its call timeout, its plugins and its worker count.
func RuntimeEnv(f *api.Func) []api.EnvVar {
	env := []api.EnvVar{{Name: "FUNC_NAME", Value: BaseName(f.Name)},
		{Name: "FUNC_TIMEOUT_SECONDS", Value: strconv.Itoa(TimeoutSeconds(&f.Spec))}}
	if p := f.Spec.Plugins; p != nil && len(p.Pre)+len(p.Post) > 0 {
		env = append(env, api.EnvVar{Name: EnvPluginsPre, Value: strings.Join(p.Pre, ",")},
			api.EnvVar{Name: EnvPluginsPost, Value: strings.Join(p.Post, ",")})
	}
	if f.Spec.ContainerConcurrency != nil {
		// One worker per concurrent call: the pod itself never runs more
		// than containerConcurrency calls at once.
		env = append(env, api.EnvVar{Name: "FUNC_WORKERS", Value: strconv.Itoa(*f.Spec.ContainerConcurrency)})
	}
	return env
}

// PodTemplate is the template of a function's ReplicaSet.
func PodTemplate(f *api.Func) api.PodTemplateSpec {
	return api.PodTemplateSpec{
		ObjectMeta: api.ObjectMeta{Labels: podLabels(f)},
		Spec:       PodSpec(f),
	}
}

// Result is what the runtime answers for one call.
type Result struct {
	// Result is run's return value as bytes: str as is (UTF-8), bytes as
	// they are, None as "", other values JSON-encoded, values JSON cannot
	// encode as str().
	Result api.Bytes `json:"result"`
	// ResultType is how the result answers over HTTP (ResultJSON,
	// ResultHTTP; "" for text).
	ResultType string `json:"resultType,omitempty"`
	// Check is the truthiness of check(Result); null without check or when
	// run failed.
	Check    *bool `json:"check"`
	HasCheck bool  `json:"hasCheck"`
	// Output is what the call printed to sys.stdout and sys.stderr, cut
	// after 1 MiB with the cut noted (OutputNote) at its end.
	Output string `json:"output"`
	// OutputDropped is how many bytes of output were cut.
	OutputDropped int64  `json:"outputDropped,omitempty"`
	Error         *Error `json:"error"`
	// PluginErrors are the post plugins that failed, "NAME: TYPE: message".
	PluginErrors []string `json:"pluginErrors,omitempty"`
	// Sends are what the call sent through the function's outputs
	// (minik8s.send), for the runner to deliver: none when run failed.
	Sends []Send `json:"sends,omitempty"`
	// Spans are the pod's spans of the call (the tracing plugin's): a JSON
	// array of api.FuncSpan, passed on by the function server as the
	// worker wrote it and decoded once, by the runner that stores them.
	Spans json.RawMessage `json:"spans,omitempty"`
	// DurationMs is the whole call as the runtime saw it, queueing
	// included; QueueMs the part spent waiting for a free worker.
	DurationMs int64  `json:"durationMs"`
	QueueMs    int64  `json:"queueMs"`
	Pod        string `json:"pod"`
}

// Send is data a call sent through one of its function's outputs.
type Send struct {
	Output string    `json:"output"`
	Data   api.Bytes `json:"data"`
}

// Error is a function's failure: an exception, a timeout, a crash.
type Error struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Trace   string `json:"trace"`
}

func (e *Error) String() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// OutputNote ends an output that was cut: how many bytes were dropped.
func OutputNote(dropped int64) string {
	return fmt.Sprintf("\n[output truncated: %d bytes dropped]\n", dropped)
}
