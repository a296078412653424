package pod

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
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
	for j, e := range c.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
			continue
		}
		v, ok, err := w.envFrom(ctx, p.Namespace, fmt.Sprintf("%s.env[%d]", containerField(p, i), j), e)
		if err != nil {
			return nil, err
		}
		if ok {
			env = append(env, e.Name+"="+v)
		}
	}
	return env, nil
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
func (w *Worker) envFrom(ctx context.Context, ns, field string, e api.EnvVar) (value string, ok bool, err error) {
	src := e.ValueFrom
	var kind string
	var ref *api.KeySelector
	switch {
	case src.SecretKeyRef != nil && src.ConfigMapKeyRef != nil:
		return "", false, errdefs.Invalid(field+".valueFrom", "env %s: valueFrom names both a secretKeyRef and a configMapKeyRef", e.Name)
	case src.SecretKeyRef != nil:
		kind, ref = "Secret", src.SecretKeyRef
	case src.ConfigMapKeyRef != nil:
		kind, ref = "ConfigMap", src.ConfigMapKeyRef
	default:
		return "", false, errdefs.Invalid(field+".valueFrom", "env %s: valueFrom names no secretKeyRef or configMapKeyRef", e.Name)
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
