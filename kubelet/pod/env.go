package pod

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"

	"minik8s/kubelet/downward"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
)

// The Service through which pods reach the apiserver, as in Kubernetes.
const (
	apiServiceNamespace = "default"
	apiServiceName      = "kubernetes"
)

// envFor builds the environment of container i: the kubelet's own
// variables, KUBERNETES_SERVICE_HOST and _PORT, then the container's env
// with its valueFrom keys read. Later entries win (containerd keeps the
// last of a name), so the container's own env overrides the kubelet's.
func (w *Worker) envFor(ctx context.Context, p *api.Pod, i int) ([]string, error) {
	c := podContainers(p)[i]
	ports := w.assigned[c.Name]
	env := []string{
		"HOST=" + w.podAddress(),
		"POD_IP=" + w.podAddress(),
		"POD_NAME=" + p.Name,
		"POD_NAMESPACE=" + p.Namespace,
		"NODE_NAME=" + w.cfg.NodeName,
	}
	if len(ports) > 0 {
		env = append(env, "PORT="+strconv.Itoa(int(ports[0].ContainerPort)))
	}
	for _, port := range ports {
		if port.Name != "" {
			env = append(env, "PORT_"+envName(port.Name)+"="+strconv.Itoa(int(port.ContainerPort)))
		}
	}
	env = append(env, w.apiServiceEnv(ctx)...)
	for j, src := range c.EnvFrom {
		vars, err := w.envFromSource(ctx, p, fmt.Sprintf("%s.envFrom[%d]", containerField(p, i), j), src)
		if err != nil {
			return nil, err
		}
		env = append(env, vars...)
	}
	// $(NAME) in a value is a variable set before it, as in Kubernetes.
	defined := envMap(env)
	for j, e := range c.Env {
		v, ok := expansion.Expand(e.Value, expansion.MappingFuncFor(defined)), true
		if e.ValueFrom != nil {
			var err error
			v, ok, err = w.envFrom(ctx, p, c.Name, fmt.Sprintf("%s.env[%d]", containerField(p, i), j), e)
			if err != nil {
				return nil, err
			}
		}
		if ok {
			env = append(env, e.Name+"="+v)
			defined[e.Name] = v
		}
	}
	return env, nil
}

// envMap is env's variables by name, the last of a name winning.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// expandCommand replaces $(NAME) in a command or its args with the
// container's variables, as Kubernetes does.
func expandCommand(args []string, env []string) []string {
	if len(args) == 0 {
		return args
	}
	mapping := expansion.MappingFuncFor(envMap(env))
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expansion.Expand(a, mapping)
	}
	return out
}

// envFromSource is a variable for each key of src's ConfigMap or Secret
// (with src's prefix), in the keys' order; a key that cannot be a
// variable's name is left out, as Kubernetes does, with an event.
func (w *Worker) envFromSource(ctx context.Context, p *api.Pod, field string, src corev1.EnvFromSource) ([]string, error) {
	kind, name, optional := "ConfigMap", "", false
	switch {
	case src.ConfigMapRef != nil && src.SecretRef != nil:
		return nil, errdefs.Invalid(field, "names both a configMapRef and a secretRef")
	case src.ConfigMapRef != nil:
		name, optional = src.ConfigMapRef.Name, src.ConfigMapRef.Optional != nil && *src.ConfigMapRef.Optional
	case src.SecretRef != nil:
		kind, name, optional = "Secret", src.SecretRef.Name, src.SecretRef.Optional != nil && *src.SecretRef.Optional
	default:
		return nil, errdefs.Invalid(field, "names no configMapRef or secretRef")
	}
	data, err := w.keysOf(ctx, kind, p.Namespace, name)
	switch {
	case errdefs.IsNotFound(err) && optional:
		return nil, nil
	case errdefs.IsNotFound(err):
		return nil, &envError{class: errdefs.ErrNotFound, msg: fmt.Sprintf("%s: %s %s/%s not found", field, kind, p.Namespace, name)}
	case err != nil:
		return nil, fmt.Errorf("%s: reading %s %s/%s: %w", field, kind, p.Namespace, name, err)
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out, invalid []string
	for _, k := range keys {
		if len(validation.IsEnvVarName(src.Prefix+k)) > 0 {
			invalid = append(invalid, k)
			continue
		}
		out = append(out, src.Prefix+k+"="+data[k])
	}
	if len(invalid) > 0 {
		events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "InvalidEnvironmentVariableNames",
			"Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
			strings.Join(invalid, ", "), kind, p.Namespace, name)
	}
	return out, nil
}

// apiServiceEnv points the container at the apiserver through the
// Service default/kubernetes, when there is one: its cluster IP and its
// port named https, else its first.
func (w *Worker) apiServiceEnv(ctx context.Context) []string {
	svc, err := w.api.GetService(ctx, apiServiceNamespace, apiServiceName)
	if err != nil {
		if !errdefs.IsNotFound(err) && ctx.Err() == nil {
			w.log.WithError(err).Warn("reading service default/kubernetes; the container gets no KUBERNETES_SERVICE_HOST")
		}
		return nil
	}
	if net.ParseIP(svc.Spec.ClusterIP) == nil || len(svc.Spec.Ports) == 0 {
		return nil
	}
	port := svc.Spec.Ports[0]
	for _, sp := range svc.Spec.Ports {
		if sp.Name == "https" {
			port = sp
			break
		}
	}
	return []string{
		"KUBERNETES_SERVICE_HOST=" + svc.Spec.ClusterIP,
		"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(int(port.Port)),
	}
}

// envError is a valueFrom that cannot be read; it keeps the class of the
// cause (NotFound, say) under a message naming the variable.
type envError struct {
	msg   string
	class error
}

func (e *envError) Error() string { return e.msg }
func (e *envError) Unwrap() error { return e.class }

// envFrom reads the value of a valueFrom variable; ok is false when an
// optional object or key is missing (the variable is left out).
func (w *Worker) envFrom(ctx context.Context, p *api.Pod, container, field string, e api.EnvVar) (value string, ok bool, err error) {
	src := e.ValueFrom
	ns := p.Namespace
	var kind string
	var ref *api.KeySelector
	set := 0
	for _, s := range []bool{src.SecretKeyRef != nil, src.ConfigMapKeyRef != nil, src.FieldRef != nil, src.ResourceFieldRef != nil} {
		if s {
			set++
		}
	}
	switch {
	case set > 1:
		return "", false, errdefs.Invalid(field+".valueFrom", "env %s: valueFrom names more than one source", e.Name)
	case src.FieldRef != nil:
		v, err := downward.Field(p, downward.Addresses{PodIP: w.podAddress(), HostIP: w.cfg.NodeIP}, src.FieldRef.FieldPath)
		if err != nil {
			return "", false, fmt.Errorf("env %s: %w", e.Name, err)
		}
		return v, true, nil
	case src.ResourceFieldRef != nil:
		v, err := downward.Resource(p, container, src.ResourceFieldRef, w.cfg.Allocatable)
		if err != nil {
			return "", false, fmt.Errorf("env %s: %w", e.Name, err)
		}
		return v, true, nil
	case src.SecretKeyRef != nil:
		kind, ref = "Secret", src.SecretKeyRef
	case src.ConfigMapKeyRef != nil:
		kind, ref = "ConfigMap", src.ConfigMapKeyRef
	default:
		return "", false, errdefs.Invalid(field+".valueFrom", "env %s: valueFrom names no source", e.Name)
	}
	data, err := w.keysOf(ctx, kind, ns, ref.Name)
	optional := ref.Optional != nil && *ref.Optional
	switch {
	case errdefs.IsNotFound(err) && optional:
		return "", false, nil
	case errdefs.IsNotFound(err):
		return "", false, &envError{class: errdefs.ErrNotFound,
			msg: fmt.Sprintf("env %s: %s %s/%s not found (wanted for key %q)", e.Name, kind, ns, ref.Name, ref.Key)}
	case err != nil:
		return "", false, fmt.Errorf("env %s: reading %s %s/%s for key %q: %w", e.Name, kind, ns, ref.Name, ref.Key, err)
	}
	v, found := data[ref.Key]
	switch {
	case found:
		return v, true, nil
	case optional:
		return "", false, nil
	}
	return "", false, &envError{class: errdefs.ErrNotFound,
		msg: fmt.Sprintf("env %s: key %q not found in %s %s/%s", e.Name, ref.Key, kind, ns, ref.Name)}
}

// keysOf reads the keys of a Secret or a ConfigMap.
func (w *Worker) keysOf(ctx context.Context, kind, ns, name string) (map[string]string, error) {
	out := map[string]string{}
	if kind == "Secret" {
		s, err := w.api.GetSecret(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	cm, err := w.api.GetConfigMap(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	for k, v := range cm.BinaryData {
		out[k] = string(v)
	}
	for k, v := range cm.Data {
		out[k] = v
	}
	return out, nil
}
