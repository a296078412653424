// Package validation is the one place that decides whether an object is
// well-formed, and fills the defaults Kubernetes users expect. Every error
// names the field and the reason.
package validation

import (
	"encoding/base64"
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	imageref "github.com/google/go-containerregistry/pkg/name"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
	"minik8s/pkg/quantity"
	"minik8s/pkg/rollout"
)

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// Func names follow the reference design, which uses names like append_world.
	funcName     = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelValue   = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
	labelName    = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	envName      = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
)

// MaxFuncNameLength bounds Func names so derived object names stay valid.
const MaxFuncNameLength = 52

// Name checks an object name for a resource.
func Name(res api.Resource, name string) error {
	if name == "" {
		return errdefs.Invalid("metadata.name", "name is required")
	}
	if res.Kind == "Func" {
		return FuncName("metadata.name", name)
	}
	if res.Group == api.RBACGroup {
		return pathSegmentName("metadata.name", name)
	}
	if len(name) > 253 {
		return errdefs.Invalid("metadata.name", "%q is longer than 253 characters", name)
	}
	if !dnsSubdomain.MatchString(name) {
		return errdefs.Invalid("metadata.name", "%q must consist of lower case letters, digits, '-' and '.', and start and end with a letter or digit", name)
	}
	return nil
}

// FuncName checks the name of a function, as a template or as a chain target.
func FuncName(field, name string) error {
	switch {
	case name == api.FuncReturn || name == api.FuncTemplate:
		return errdefs.Invalid(field, "%q is reserved", name)
	case len(name) > MaxFuncNameLength:
		return errdefs.Invalid(field, "%q is longer than %d characters", name, MaxFuncNameLength)
	case !funcName.MatchString(name):
		return errdefs.Invalid(field, "%q must consist of letters, digits, '-', '_' and '.', and start and end with a letter or digit", name)
	}
	return nil
}

// Namespace checks a namespace name.
func Namespace(ns string) error {
	if len(ns) > 63 || !dnsLabel.MatchString(ns) {
		return errdefs.Invalid("metadata.namespace", "%q must be a DNS label: lower case letters, digits and '-', at most 63 characters", ns)
	}
	return nil
}

// Object validates an object of the given resource after defaulting.
func Object(res api.Resource, obj api.Object) error {
	meta := obj.GetObjectMeta()
	if err := Name(res, meta.Name); err != nil {
		return err
	}
	if res.Namespaced {
		if err := Namespace(meta.Namespace); err != nil {
			return err
		}
	}
	if err := labelSet("metadata.labels", meta.Labels); err != nil {
		return err
	}
	if err := finalizers(meta.Finalizers); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *api.Pod:
		return PodSpec("spec", &o.Spec)
	case *api.ReplicaSet:
		return replicaSet(o)
	case *api.Deployment:
		return deploymentSpec(o)
	case *api.HorizontalPodAutoscaler:
		return hpa(o)
	case *api.Job:
		return jobSpec("spec", &o.Spec)
	case *api.CronJob:
		return cronJob(o)
	case *api.Service:
		return service(o)
	case *api.Endpoints:
		return endpoints(o)
	case *api.ConfigMap:
		return configMap(o)
	case *api.Func:
		return Func(o)
	case *api.FuncInstance:
		return FuncName("spec.function", o.Spec.Function)
	case *api.Trigger:
		return trigger(o)
	case *api.App:
		return configKeys("spec.config", o.Spec.Config)
	case *api.Node:
		return resourceList("status.capacity", o.Status.Capacity)
	case *api.Namespace:
		if len(meta.Name) > 63 || !dnsLabel.MatchString(meta.Name) {
			return errdefs.Invalid("metadata.name", "%q must be a DNS label: lower case letters, digits and '-', at most 63 characters", meta.Name)
		}
	case *api.Secret:
		return secret(o)
	case *api.Role:
		return policyRules("rules", o.Rules, true)
	case *api.ClusterRole:
		return policyRules("rules", o.Rules, false)
	case *api.RoleBinding:
		return binding(o.Subjects, o.RoleRef, true)
	case *api.ClusterRoleBinding:
		return binding(o.Subjects, o.RoleRef, false)
	case *api.Event:
		return event(o)
	case *api.Lease:
		if d := o.Spec.LeaseDurationSeconds; d != nil && *d < 1 {
			return errdefs.Invalid("spec.leaseDurationSeconds", "%d must be at least 1", *d)
		}
	}
	return nil
}

// finalizers are qualified names, as label keys are ("example.com/hold"),
// or one of Kubernetes' own without a prefix, each once.
func finalizers(fs []string) error {
	for i, f := range fs {
		field := fmt.Sprintf("metadata.finalizers[%d]", i)
		if slices.Contains(fs[:i], f) {
			return errdefs.Invalid(field, "%q is listed twice", f)
		}
		switch f {
		case api.FinalizerForeground, "orphan", "kubernetes":
			continue
		}
		if !strings.Contains(f, "/") {
			return errdefs.Invalid(field, "%q must be a qualified name (prefix/name, as example.com/cleanup) or one of foregroundDeletion, orphan, kubernetes", f)
		}
		if err := labelSet(field, map[string]string{f: ""}); err != nil {
			return errdefs.Invalid(field, "%q is not a qualified name (prefix/name, as example.com/cleanup)", f)
		}
	}
	return nil
}

func labelSet(field string, set map[string]string) error {
	for k, v := range set {
		key := k
		if i := strings.LastIndex(k, "/"); i >= 0 {
			if !dnsSubdomain.MatchString(k[:i]) {
				return errdefs.Invalid(field, "label key %q has an invalid prefix", k)
			}
			key = k[i+1:]
		}
		if len(key) > 63 || !labelName.MatchString(key) {
			return errdefs.Invalid(field, "label key %q must be at most 63 letters, digits, '-', '_' or '.'", k)
		}
		if len(v) > 63 || !labelValue.MatchString(v) {
			return errdefs.Invalid(field+"."+k, "label value %q must be at most 63 letters, digits, '-', '_' or '.'", v)
		}
	}
	return nil
}

func resourceList(field string, rl api.ResourceList) error {
	for name, q := range rl {
		f := field + "." + name
		switch name {
		case api.ResourceCPU:
			// A fraction of a millicore rounds up to 1m, as in Kubernetes; a
			// value beyond int64 millicores is an error.
			if _, err := quantity.MilliCPU(q); err != nil {
				return errdefs.Invalid(f, "%v", err)
			}
		case api.ResourceMemory, api.ResourcePods:
			if _, err := quantity.Bytes(q); err != nil {
				return errdefs.Invalid(f, "%v", err)
			}
		default:
			if _, err := quantity.Parse(q); err != nil {
				return errdefs.Invalid(f, "%v", err)
			}
		}
	}
	return nil
}

// PodSpec validates a pod spec (of a pod or of a ReplicaSet template).
func PodSpec(field string, s *api.PodSpec) error {
	if len(s.Containers) == 0 {
		return errdefs.Invalid(field+".containers", "at least one container is required")
	}
	volumes := map[string]bool{}
	for i, v := range s.Volumes {
		f := fmt.Sprintf("%s.volumes[%d]", field, i)
		if !dnsLabel.MatchString(v.Name) {
			return errdefs.Invalid(f+".name", "%q must be a DNS label", v.Name)
		}
		if volumes[v.Name] {
			return errdefs.Invalid(f+".name", "duplicate volume %q", v.Name)
		}
		volumes[v.Name] = true
		sources := 0
		if v.EmptyDir != nil {
			sources++
		}
		if v.HostPath != nil {
			sources++
			if !strings.HasPrefix(v.HostPath.Path, "/") {
				return errdefs.Invalid(f+".hostPath.path", "%q must be an absolute path", v.HostPath.Path)
			}
		}
		if v.ConfigMap != nil {
			sources++
			if err := Name(api.ConfigMapsResource, v.ConfigMap.Name); err != nil {
				return errdefs.Invalid(f+".configMap.name", "%v", err)
			}
		}
		if v.Secret != nil {
			sources++
			if err := Name(api.SecretsResource, v.Secret.SecretName); err != nil {
				return errdefs.Invalid(f+".secret.secretName", "%v", err)
			}
			if m := v.Secret.DefaultMode; m != nil && (*m < 0 || *m > 0o777) {
				return errdefs.Invalid(f+".secret.defaultMode", "%o is not a file mode (0 to 0777)", *m)
			}
		}
		if sources != 1 {
			return errdefs.Invalid(f, "exactly one of emptyDir, hostPath, configMap, secret is required")
		}
	}
	names := map[string]bool{}
	for i := range s.Containers {
		c := &s.Containers[i]
		f := fmt.Sprintf("%s.containers[%d]", field, i)
		if !dnsLabel.MatchString(c.Name) || len(c.Name) > 63 {
			return errdefs.Invalid(f+".name", "%q must be a DNS label", c.Name)
		}
		if names[c.Name] {
			return errdefs.Invalid(f+".name", "duplicate container name %q", c.Name)
		}
		names[c.Name] = true
		if strings.TrimSpace(c.Image) == "" {
			return errdefs.Invalid(f+".image", "image is required")
		}
		for j, e := range c.Env {
			ef := fmt.Sprintf("%s.env[%d]", f, j)
			if !envName.MatchString(e.Name) {
				return errdefs.Invalid(ef+".name", "%q is not a valid environment variable name", e.Name)
			}
			if err := envSource(ef, e); err != nil {
				return err
			}
		}
		portNames := map[string]bool{}
		for j, p := range c.Ports {
			pf := fmt.Sprintf("%s.ports[%d]", f, j)
			if p.ContainerPort < 0 || p.ContainerPort > 65535 {
				return errdefs.Invalid(pf+".containerPort", "%d is not in 0..65535 (0 allocates a port)", p.ContainerPort)
			}
			if p.HostPort < 0 || p.HostPort > 65535 {
				return errdefs.Invalid(pf+".hostPort", "%d is not in 0..65535", p.HostPort)
			}
			if p.HostIP != "" && (net.ParseIP(p.HostIP) == nil || net.ParseIP(p.HostIP).To4() == nil) {
				return errdefs.Invalid(pf+".hostIP", "%q is not an IPv4 address", p.HostIP)
			}
			if p.HostIP != "" && p.HostPort == 0 {
				return errdefs.Invalid(pf+".hostIP", "needs a hostPort")
			}
			if p.Name != "" {
				if len(p.Name) > 15 || !dnsLabel.MatchString(p.Name) {
					return errdefs.Invalid(pf+".name", "%q must be a DNS label of at most 15 characters", p.Name)
				}
				if portNames[p.Name] {
					return errdefs.Invalid(pf+".name", "duplicate port name %q", p.Name)
				}
				portNames[p.Name] = true
			}
			if p.Protocol != "TCP" {
				return errdefs.Invalid(pf+".protocol", "%q is not supported (only TCP)", p.Protocol)
			}
		}
		if err := resourceList(f+".resources.limits", c.Resources.Limits); err != nil {
			return err
		}
		if err := resourceList(f+".resources.requests", c.Resources.Requests); err != nil {
			return err
		}
		for j, m := range c.VolumeMounts {
			mf := fmt.Sprintf("%s.volumeMounts[%d]", f, j)
			if !volumes[m.Name] {
				return errdefs.Invalid(mf+".name", "no volume named %q", m.Name)
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				return errdefs.Invalid(mf+".mountPath", "%q must be an absolute path", m.MountPath)
			}
		}
		for _, pr := range []struct {
			name string
			p    *api.Probe
		}{{"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}} {
			if pr.p == nil {
				continue
			}
			pf := f + "." + pr.name
			if err := validateProbeHandler(pf, pr.p, c.Ports); err != nil {
				return err
			}
			if pr.p.PeriodSeconds < 0 || pr.p.TimeoutSeconds < 0 || pr.p.FailureThreshold < 0 || pr.p.InitialDelaySeconds < 0 {
				return errdefs.Invalid(pf, "durations and thresholds must not be negative")
			}
		}
	}
	switch s.RestartPolicy {
	case api.RestartPolicyAlways, api.RestartPolicyOnFailure, api.RestartPolicyNever:
	default:
		return errdefs.Invalid(field+".restartPolicy", "%q is not one of Always, OnFailure, Never", s.RestartPolicy)
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		return errdefs.Invalid(field+".terminationGracePeriodSeconds", "must not be negative")
	}
	return nil
}

func envSource(field string, e api.EnvVar) error {
	if e.ValueFrom == nil {
		return nil
	}
	if e.Value != "" {
		return errdefs.Invalid(field+".valueFrom", "may not be given with value")
	}
	refs := 0
	for _, r := range []struct {
		name string
		ref  *api.KeySelector
	}{{"secretKeyRef", e.ValueFrom.SecretKeyRef}, {"configMapKeyRef", e.ValueFrom.ConfigMapKeyRef}} {
		if r.ref == nil {
			continue
		}
		refs++
		if r.ref.Name == "" || r.ref.Key == "" {
			return errdefs.Invalid(field+".valueFrom."+r.name, "name and key are required")
		}
	}
	if refs != 1 {
		return errdefs.Invalid(field+".valueFrom", "exactly one of secretKeyRef, configMapKeyRef is required")
	}
	return nil
}

func probePort(field, port string, ports []api.ContainerPort) error {
	if port == "" {
		return errdefs.Invalid(field, "port is required")
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			return errdefs.Invalid(field, "%d is not in 1..65535", n)
		}
		return nil
	}
	for _, p := range ports {
		if p.Name == port {
			return nil
		}
	}
	return errdefs.Invalid(field, "no container port named %q", port)
}

func replicaSet(rs *api.ReplicaSet) error {
	if rs.Spec.Replicas != nil && *rs.Spec.Replicas < 0 {
		return errdefs.Invalid("spec.replicas", "%d must not be negative", *rs.Spec.Replicas)
	}
	if rs.Spec.MinReadySeconds < 0 {
		return errdefs.Invalid("spec.minReadySeconds", "%d must not be negative", rs.Spec.MinReadySeconds)
	}
	sel, err := labels.FromLabelSelector(rs.Spec.Selector)
	if err != nil {
		return errdefs.Invalid("spec.selector", "%v", err)
	}
	if sel.Empty() {
		return errdefs.Invalid("spec.selector", "selector must not be empty")
	}
	if err := labelSet("spec.template.metadata.labels", rs.Spec.Template.Labels); err != nil {
		return err
	}
	if !sel.Matches(rs.Spec.Template.Labels) {
		return errdefs.Invalid("spec.template.metadata.labels", "labels do not match the selector %q", sel.String())
	}
	if rs.Spec.Template.Spec.RestartPolicy != api.RestartPolicyAlways {
		return errdefs.Invalid("spec.template.spec.restartPolicy", "only Always is supported for a ReplicaSet")
	}
	return PodSpec("spec.template.spec", &rs.Spec.Template.Spec)
}

func deploymentSpec(d *api.Deployment) error {
	// The pod template and selector are checked as a ReplicaSet's are.
	rs := &api.ReplicaSet{Spec: api.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}
	if err := replicaSet(rs); err != nil {
		return err
	}
	if _, ok := d.Spec.Template.Labels[api.LabelPodTemplateHash]; ok {
		return errdefs.Invalid("spec.template.metadata.labels", "%s is set by the deployment controller", api.LabelPodTemplateHash)
	}
	switch st := d.Spec.Strategy; st.Type {
	case api.DeploymentRecreate:
		if st.RollingUpdate != nil {
			return errdefs.Invalid("spec.strategy.rollingUpdate", "may not be given with type Recreate")
		}
	case api.DeploymentRollingUpdate:
		if ru := st.RollingUpdate; ru != nil {
			for field, v := range map[string]*api.IntOrString{"maxSurge": ru.MaxSurge, "maxUnavailable": ru.MaxUnavailable} {
				if _, err := rollout.Scaled(v, "0", 100, true); err != nil {
					return errdefs.Invalid("spec.strategy.rollingUpdate."+field, "%v", err)
				}
			}
			surge, _ := rollout.Scaled(ru.MaxSurge, "0", 100, true)
			unavailable, _ := rollout.Scaled(ru.MaxUnavailable, "0", 100, false)
			if surge == 0 && unavailable == 0 {
				return errdefs.Invalid("spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when maxSurge is 0")
			}
			if strings.HasSuffix(string(deref(ru.MaxUnavailable)), "%") && unavailable > 100 {
				return errdefs.Invalid("spec.strategy.rollingUpdate.maxUnavailable", "must not be more than 100%%")
			}
		}
	default:
		return errdefs.Invalid("spec.strategy.type", "%q is not RollingUpdate or Recreate", st.Type)
	}
	if d.Spec.MinReadySeconds < 0 {
		return errdefs.Invalid("spec.minReadySeconds", "%d must not be negative", d.Spec.MinReadySeconds)
	}
	if n := d.Spec.RevisionHistoryLimit; n != nil && *n < 0 {
		return errdefs.Invalid("spec.revisionHistoryLimit", "%d must not be negative", *n)
	}
	if n := d.Spec.ProgressDeadlineSeconds; n != nil && *n <= d.Spec.MinReadySeconds {
		return errdefs.Invalid("spec.progressDeadlineSeconds", "%d must be more than minReadySeconds %d", *n, d.Spec.MinReadySeconds)
	}
	return nil
}

func deref(v *api.IntOrString) api.IntOrString {
	if v == nil {
		return ""
	}
	return *v
}

func service(s *api.Service) error {
	if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != "None" {
		if ip := net.ParseIP(s.Spec.ClusterIP); ip == nil || ip.To4() == nil {
			return errdefs.Invalid("spec.clusterIP", "%q is not an IPv4 address", s.Spec.ClusterIP)
		}
	}
	if err := labelSet("spec.selector", s.Spec.Selector); err != nil {
		return err
	}
	seen := map[int32]bool{}
	for i, p := range s.Spec.Ports {
		f := fmt.Sprintf("spec.ports[%d]", i)
		if p.Port < 1 || p.Port > 65535 {
			return errdefs.Invalid(f+".port", "%d is not in 1..65535", p.Port)
		}
		if seen[p.Port] {
			return errdefs.Invalid(f+".port", "duplicate port %d", p.Port)
		}
		seen[p.Port] = true
		if p.Protocol != "TCP" {
			return errdefs.Invalid(f+".protocol", "%q is not supported (only TCP)", p.Protocol)
		}
		if n, err := strconv.Atoi(string(p.TargetPort)); err == nil && (n < 1 || n > 65535) {
			return errdefs.Invalid(f+".targetPort", "%d is not in 1..65535", n)
		} else if err != nil && !dnsLabel.MatchString(string(p.TargetPort)) {
			return errdefs.Invalid(f+".targetPort", "%q is neither a port number nor a port name", p.TargetPort)
		}
	}
	return nil
}

func endpoints(e *api.Endpoints) error {
	for i, s := range e.Subsets {
		for j, a := range append(append([]api.EndpointAddress{}, s.Addresses...), s.NotReadyAddresses...) {
			if net.ParseIP(a.IP) == nil {
				return errdefs.Invalid(fmt.Sprintf("subsets[%d].addresses[%d].ip", i, j), "%q is not an IP address", a.IP)
			}
		}
	}
	return nil
}

// MaxSecretBytes bounds a Secret's data, as Kubernetes does.
const MaxSecretBytes = 1 << 20

func secret(s *api.Secret) error {
	size := 0
	for k, v := range s.Data {
		if !configMapKey.MatchString(k) || k == "." || k == ".." {
			return errdefs.Invalid("data."+k, "key %q must consist of letters, digits, '-', '_' and '.'", k)
		}
		size += len(v)
	}
	if size > MaxSecretBytes {
		return errdefs.Invalid("data", "%d bytes is more than the %d a Secret holds", size, MaxSecretBytes)
	}
	return nil
}

func configMap(c *api.ConfigMap) error {
	for k := range c.Data {
		if !configMapKey.MatchString(k) || k == "." || k == ".." {
			return errdefs.Invalid("data."+k, "key %q must consist of letters, digits, '-', '_' and '.'", k)
		}
		if _, dup := c.BinaryData[k]; dup {
			return errdefs.Invalid("binaryData."+k, "key %q is also in data", k)
		}
	}
	for k := range c.BinaryData {
		if !configMapKey.MatchString(k) || k == "." || k == ".." {
			return errdefs.Invalid("binaryData."+k, "key %q must consist of letters, digits, '-', '_' and '.'", k)
		}
	}
	return nil
}

// Func validates a function template.
func Func(f *api.Func) error {
	switch f.APIVersion {
	case api.FuncAPIVersionV1, api.FuncAPIVersionV2:
	default:
		return errdefs.Invalid("apiVersion", "%q is not v1 (a fresh pod per call) or v2 (a warm pool)", f.APIVersion)
	}
	if f.Spec.Name != f.Name {
		return errdefs.Invalid("spec.name", "%q must equal metadata.name %q", f.Spec.Name, f.Name)
	}
	if f.Spec.Mode != "" {
		return errdefs.Invalid("spec.mode", "is written in the %s view (/apis/%s); here apiVersion v1 or v2 selects the mode", api.FuncGroupVersion, api.FuncGroupVersion)
	}
	if err := funcCode(&f.Spec); err != nil {
		return err
	}
	if err := funcPlugins(&f.Spec); err != nil {
		return err
	}
	for _, b := range []struct{ field, name string }{{"spec.left", f.Spec.Left}, {"spec.right", f.Spec.Right}} {
		if b.name == "" || b.name == api.FuncReturn {
			continue
		}
		if err := FuncName(b.field, b.name); err != nil {
			return err
		}
	}
	if f.Spec.ServiceAddress != "" {
		if ip := net.ParseIP(f.Spec.ServiceAddress); ip == nil || ip.To4() == nil {
			return errdefs.Invalid("spec.serviceAddress", "%q is not an IPv4 address", f.Spec.ServiceAddress)
		}
	}
	for _, n := range []struct {
		field string
		v     *int
	}{{"spec.initInstanceNum", f.Spec.InitInstanceNum}, {"spec.maxInstanceNum", f.Spec.MaxInstanceNum}, {"spec.minInstanceNum", f.Spec.MinInstanceNum}} {
		if n.v != nil && *n.v < 0 {
			return errdefs.Invalid(n.field, "%d must not be negative", *n.v)
		}
		// Kubernetes counts replicas in an int32; so do the ReplicaSets a
		// function's instances become.
		if n.v != nil && *n.v > math.MaxInt32 {
			return errdefs.Invalid(n.field, "%d is more than %d", *n.v, math.MaxInt32)
		}
	}
	lo, initial, hi := FuncBounds(&f.Spec)
	if hi < 1 {
		return errdefs.Invalid("spec.maxInstanceNum", "must be at least 1")
	}
	if lo > hi {
		return errdefs.Invalid("spec.minInstanceNum", "%d is more than maxInstanceNum %d", lo, hi)
	}
	if initial < lo || initial > hi {
		return errdefs.Invalid("spec.initInstanceNum", "%d is not between minInstanceNum %d and maxInstanceNum %d", initial, lo, hi)
	}
	if t := f.Spec.TimeoutSeconds; t != nil && (*t < 1 || *t > 3600) {
		return errdefs.Invalid("spec.timeoutSeconds", "%d is not in 1..3600", *t)
	}
	if c := f.Spec.ContainerConcurrency; c != nil && (*c < 1 || *c > MaxContainerConcurrency) {
		return errdefs.Invalid("spec.containerConcurrency", "%d is not in 1..%d", *c, MaxContainerConcurrency)
	}
	return nil
}

// funcCode checks what a function runs: Python source (spec.function, with
// spec.preRun and spec.runtime around it), or an image of its own
// (spec.image) that serves the runtime's HTTP contract. The Python fields
// mean nothing to an image, so they are refused rather than ignored.
func funcCode(s *api.FuncSpec) error {
	if s.Image != "" {
		switch {
		case s.Function != "":
			return errdefs.Invalid("spec.image", "give either spec.function (Python source) or spec.image, not both")
		case s.PreRun != "":
			return errdefs.Invalid("spec.preRun", "an image function has no preRun: its image sets itself up")
		case s.Runtime != "":
			return errdefs.Invalid("spec.runtime", "an image function runs its own image, not a runtime")
		}
		if _, err := imageref.ParseReference(s.Image); err != nil {
			return errdefs.Invalid("spec.image", "%q is not an image reference: %v", s.Image, err)
		}
		return nil
	}
	if s.Function == "" {
		return errdefs.Invalid("spec.function", "the function's Python source (base64) or spec.image is required")
	}
	if _, err := base64.StdEncoding.DecodeString(s.Function); err != nil {
		return errdefs.Invalid("spec.function", "not valid base64: %v", err)
	}
	if _, err := base64.StdEncoding.DecodeString(s.PreRun); err != nil {
		return errdefs.Invalid("spec.preRun", "not valid base64: %v", err)
	}
	return nil
}

// ContainerConcurrency is the most calls one pod of s serves at once: the
// runtime's worker count unless the spec says otherwise.
func ContainerConcurrency(s *api.FuncSpec) int {
	if s.ContainerConcurrency != nil {
		return *s.ContainerConcurrency
	}
	return DefaultContainerConcurrency
}

// Func defaults, applied where the values are used so that a template is
// read back exactly as it was written.
const (
	DefaultFuncMaxInstances   = 10
	DefaultFuncTimeoutSeconds = 60
	DefaultFuncRuntime        = "minik8s/python-runtime:latest"
	// DefaultContainerConcurrency is the runtime's default worker count
	// (funcserver.DefaultWorkers): one call per Python worker.
	DefaultContainerConcurrency = 4
	MaxContainerConcurrency     = 64
)

// FuncBounds returns min, init and max instance counts with defaults: min 0,
// max 10 (or init, if larger), init 1 clamped into [min, max].
func FuncBounds(s *api.FuncSpec) (lo, initial, hi int) {
	hi = DefaultFuncMaxInstances
	if s.MinInstanceNum != nil {
		lo = *s.MinInstanceNum
	}
	if s.MaxInstanceNum != nil {
		hi = *s.MaxInstanceNum
	} else {
		if s.InitInstanceNum != nil {
			hi = max(hi, *s.InitInstanceNum)
		}
		hi = max(hi, lo)
	}
	if s.InitInstanceNum != nil {
		return lo, *s.InitInstanceNum, hi
	}
	return lo, min(max(1, lo), hi), hi
}

// BuiltinPlugins are the plugins every Python runtime has (seed 000).
var BuiltinPlugins = []string{"tracing", "metrics", "log-context"}

var pluginModule = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// funcPlugins checks a function's plugins and extra files: a plugin is a
// built-in or a module NAME.py of spec.files; the files are base64, named
// as ConfigMap keys, beside function.py and preRun.sh, not over them.
func funcPlugins(s *api.FuncSpec) error {
	if len(s.Files) > 0 && s.Image != "" {
		return errdefs.Invalid("spec.files", "an image function brings its files in its image")
	}
	for name, b64 := range s.Files {
		field := "spec.files." + name
		switch {
		case !configMapKey.MatchString(name) || name == "." || name == "..":
			return errdefs.Invalid(field, "%q must consist of letters, digits, '-', '_' and '.'", name)
		case name == "function.py" || name == "preRun.sh":
			return errdefs.Invalid(field, "%q is spec.function's or spec.preRun's", name)
		}
		if _, err := base64.StdEncoding.DecodeString(b64); err != nil {
			return errdefs.Invalid(field, "not valid base64: %v", err)
		}
	}
	p := s.Plugins
	if p == nil {
		return nil
	}
	if s.Image != "" && len(p.Pre)+len(p.Post) > 0 {
		return errdefs.Invalid("spec.plugins", "plugins run in the Python runtime; an image function runs its own")
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"spec.plugins.pre", p.Pre}, {"spec.plugins.post", p.Post}} {
		seen := map[string]bool{}
		for i, name := range list.names {
			field := fmt.Sprintf("%s[%d]", list.field, i)
			switch {
			case seen[name]:
				return errdefs.Invalid(field, "plugin %q is named twice", name)
			case slices.Contains(BuiltinPlugins, name):
			case !pluginModule.MatchString(name):
				return errdefs.Invalid(field, "%q is neither a built-in plugin (%s) nor a Python module name", name, strings.Join(BuiltinPlugins, ", "))
			case s.Files[name+".py"] == "":
				return errdefs.Invalid(field, "plugin %q is not built in (%s) and spec.files has no %s.py", name, strings.Join(BuiltinPlugins, ", "), name)
			}
			seen[name] = true
		}
	}
	return nil
}

// validateProbeHandler checks that a probe says how to probe, in one way.
func validateProbeHandler(field string, p *api.Probe, ports []api.ContainerPort) error {
	handlers := 0
	if p.HTTPGet != nil {
		handlers++
		if err := probePort(field+".httpGet.port", string(p.HTTPGet.Port), ports); err != nil {
			return err
		}
	}
	if p.TCPSocket != nil {
		handlers++
		if err := probePort(field+".tcpSocket.port", string(p.TCPSocket.Port), ports); err != nil {
			return err
		}
	}
	if p.Exec != nil {
		handlers++
		if len(p.Exec.Command) == 0 {
			return errdefs.Invalid(field+".exec.command", "a command is required")
		}
	}
	switch handlers {
	case 0:
		return errdefs.Invalid(field, "one of httpGet, tcpSocket and exec is required")
	case 1:
		return nil
	}
	return errdefs.Invalid(field, "only one of httpGet, tcpSocket and exec may be given")
}

func event(e *api.Event) error {
	switch {
	case e.InvolvedObject.Name == "" || e.InvolvedObject.Kind == "":
		return errdefs.Invalid("involvedObject", "the object the event is about needs a kind and a name")
	case e.Reason == "":
		return errdefs.Invalid("reason", "required")
	case e.Type != "" && e.Type != api.EventTypeNormal && e.Type != api.EventTypeWarning:
		return errdefs.Invalid("type", "%q is neither %s nor %s", e.Type, api.EventTypeNormal, api.EventTypeWarning)
	case e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != e.Namespace:
		return errdefs.Invalid("involvedObject.namespace", "%q is not the event's namespace %q", e.InvolvedObject.Namespace, e.Namespace)
	}
	return nil
}
