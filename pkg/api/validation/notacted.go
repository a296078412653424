package validation

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
)

// minik8s serves the whole of Kubernetes' pod spec, and acts on most of
// it. What it does not act on falls in two kinds, both said here, in one
// place (the README lists them and `kubectl explain` shows why, from
// NotActedOn):
//   - stored and returned but not acted on, where doing nothing is what
//     Kubernetes would do on a cluster like this one (image pull secrets
//     where images are pulled without credentials) or costs only a
//     preference (a Service's traffic distribution);
//   - refused when set (422 naming the field), where running the pod
//     without it would run something other than the manifest asks: less
//     isolated (a runtime class, user namespaces), Ready too soon (readiness
//     gates), or placed against a rule (pod affinity across namespaces).

// NotActed is a field minik8s stores and does not act on, and why that is
// safe.
type NotActed struct {
	// In is the struct the field belongs to.
	In reflect.Type
	// Field is its JSON name.
	Field string
	Why   string
}

// NotActedOn lists every field stored and not acted on.
var NotActedOn = []NotActed{
	{podSpecType, "enableServiceLinks", "Services are not passed as environment variables; the cluster DNS names them"},
	{podSpecType, "imagePullSecrets", "images are pulled without credentials"},
	{podSpecType, "os", "every node runs Linux; os.name: windows is refused"},
	{reflect.TypeOf(api.Container{}), "resizePolicy", "resources are not changed in place: a change makes new pods"},
	{reflect.TypeOf(api.Container{}), "stdin", "containers run without standard input (kubectl attach is not served)"},
	{reflect.TypeOf(api.Container{}), "stdinOnce", "containers run without standard input (kubectl attach is not served)"},
	{reflect.TypeOf(api.Container{}), "tty", "containers run without a terminal"},
	{reflect.TypeOf(api.NodeSpec{}), "configSource", "the kubelet's configuration is its flags (Kubernetes no longer acts on it either)"},
	{reflect.TypeOf(api.ServiceAccount{}), "imagePullSecrets", "images are pulled without credentials"},
	{reflect.TypeOf(api.LeaseSpec{}), "strategy", "holders take leases as they come"},
	{reflect.TypeOf(api.LeaseSpec{}), "preferredHolder", "holders take leases as they come"},
	{reflect.TypeOf(api.ServiceSpec{}), "trafficDistribution", "traffic goes to any ready endpoint, near or far"},
	{reflect.TypeOf(api.ServicePort{}), "appProtocol", "the proxies forward TCP whatever the protocol above it"},
	{metricSpecType, "pods", noMetricsAdapter},
	{metricSpecType, "object", noMetricsAdapter},
	{metricSpecType, "external", noMetricsAdapter},
	{reflect.TypeOf(api.VolumeMount{}), "recursiveReadOnly", "a read-only mount's sub mounts are not made read-only (IfPossible); Enabled is refused"},
}

var podSpecType = reflect.TypeOf(api.PodSpec{})

var metricSpecType = reflect.TypeOf(api.MetricSpec{})

const noMetricsAdapter = "minik8s serves no custom or external metrics API: the HPA's ScalingActive condition says it cannot read the metric (as on a Kubernetes cluster without a metrics adapter), and its resource metrics still scale"

// refusals gathers the refusals of fields set that minik8s does not do,
// each giving why and what would go wrong.
type refusals struct {
	errs field.ErrorList
	at   *field.Path
	why  string
}

// forbid refuses the field name (under at) when set.
func (r *refusals) forbid(set bool, name, reason string) { r.forbidAt(set, r.at.Child(name), reason) }

// forbidAt refuses the field at p when set.
func (r *refusals) forbidAt(set bool, p *field.Path, reason string) {
	if set {
		r.errs = append(r.errs, field.Forbidden(p, r.why+": "+reason))
	}
}

// notDonePod is the reason a refusal of a pod-spec field gives.
const notDonePod = "minik8s does not do this, and the pod would run without it"

// podSpecNotDone refuses the pod spec's fields minik8s does not act on
// and cannot ignore.
func podSpecNotDone(path *field.Path, s *api.PodSpec) field.ErrorList {
	r := &refusals{at: path, why: notDonePod}
	r.forbid(s.RuntimeClassName != nil && *s.RuntimeClassName != "", "runtimeClassName", "nodes have one runtime, runc")
	r.forbid(len(s.Overhead) > 0, "overhead", "it is set by a RuntimeClass, and nodes have none")
	r.forbid(len(s.ReadinessGates) > 0, "readinessGates", "the kubelet does not wait for readiness gates, so the pod would be Ready too soon")
	r.forbid(s.SchedulingGroup != nil, "schedulingGroup", "the scheduler does not place pods in groups")
	r.forbid(len(s.ResourceClaims) > 0, "resourceClaims", "there is no dynamic resource allocation")
	r.forbid(s.Resources != nil && (len(s.Resources.Limits) > 0 || len(s.Resources.Requests) > 0 || len(s.Resources.Claims) > 0),
		"resources", "the kubelet limits each container's resources, not a pod's; set them on the containers")
	r.forbid(s.HostUsers != nil && !*s.HostUsers, "hostUsers", "the kubelet does not run pods in user namespaces")
	r.forbid(s.HostnameOverride != nil, "hostnameOverride", "the pod's host name is its hostname or its name")
	r.forbid(s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN, "setHostnameAsFQDN", "the pod's host name is its short name")
	r.forbid(len(s.EphemeralContainers) > 0, "ephemeralContainers", "ephemeral containers are not run")
	r.forbid(len(s.EvictionResponders) > 0, "evictionResponders", "pods are not evicted")
	r.forbid(s.ActiveDeadlineSeconds != nil, "activeDeadlineSeconds", "the kubelet does not end pods at a deadline; a Job's own activeDeadlineSeconds does")
	if a := s.Affinity; a != nil {
		// A term reaching other namespaces would let one tenant's pods
		// steer, or keep off a node, another tenant's (an anti-affinity
		// matching every pod blocks its node for all): terms look in the
		// pod's own namespace.
		const ownOnly = "pod (anti-)affinity terms look in the pod's own namespace only: reaching others would let one tenant's pods steer or block another's"
		p := path.Child("affinity")
		check := func(terms []corev1.PodAffinityTerm, at *field.Path) {
			for i, t := range terms {
				r.forbidAt(len(t.Namespaces) > 0, at.Index(i).Child("namespaces"), ownOnly)
				r.forbidAt(t.NamespaceSelector != nil, at.Index(i).Child("namespaceSelector"), ownOnly)
			}
		}
		// Preferred terms are weighed (the scheduler's score): the same.
		checkWeighted := func(terms []corev1.WeightedPodAffinityTerm, at *field.Path) {
			for i, t := range terms {
				in := at.Index(i).Child("podAffinityTerm")
				r.forbidAt(len(t.PodAffinityTerm.Namespaces) > 0, in.Child("namespaces"), ownOnly)
				r.forbidAt(t.PodAffinityTerm.NamespaceSelector != nil, in.Child("namespaceSelector"), ownOnly)
			}
		}
		if a.PodAffinity != nil {
			check(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"))
			checkWeighted(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAffinity", "preferredDuringSchedulingIgnoredDuringExecution"))
		}
		if a.PodAntiAffinity != nil {
			check(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"))
			checkWeighted(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"))
		}
	}
	if s.OS != nil && s.OS.Name != corev1.Linux {
		r.errs = append(r.errs, field.NotSupported(path.Child("os", "name"), s.OS.Name, []corev1.OSName{corev1.Linux}))
	}
	return r.errs
}

// containerNotDone refuses a container's fields minik8s does not act on
// and cannot ignore.
func containerNotDone(path *field.Path, c *api.Container) field.ErrorList {
	r := &refusals{at: path, why: notDonePod}
	r.forbidAt(c.RestartPolicy != nil, path.Child("restartPolicy"), "sidecar containers are not run (containers restart by the pod's policy)")
	r.forbidAt(len(c.RestartPolicyRules) > 0, path.Child("restartPolicyRules"), "containers restart by the pod's policy")
	r.forbidAt(len(c.VolumeDevices) > 0, path.Child("volumeDevices"), "there are no block volumes")
	r.forbidAt(len(c.Resources.Claims) > 0, path.Child("resources", "claims"), "there is no dynamic resource allocation")
	for j, m := range c.VolumeMounts {
		p := path.Child("volumeMounts").Index(j)
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			r.errs = append(r.errs, field.NotSupported(p.Child("mountPropagation"), *m.MountPropagation,
				[]corev1.MountPropagationMode{corev1.MountPropagationNone}))
		}
		if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled {
			r.errs = append(r.errs, field.NotSupported(p.Child("recursiveReadOnly"), *m.RecursiveReadOnly,
				[]corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible}))
		}
		r.forbidAt(len(m.BindMountOptions) > 0, p.Child("bindMountOptions"), "volumes are bound with the kubelet's options")
	}
	for j, e := range c.Env {
		r.forbidAt(e.ValueFrom != nil && e.ValueFrom.FileKeyRef != nil, path.Child("env").Index(j).Child("valueFrom", "fileKeyRef"),
			"variables are not read from files of volumes")
	}
	return r.errs
}

// notDoneService is the reason a refusal of a Service's field gives.
const notDoneService = "minik8s's Services do not do this, and traffic would go other than asked"

// serviceNotDone refuses a Service's fields that would route otherwise
// than minik8s's proxies do: one IPv4 address, traffic to any ready
// endpoint from anywhere, no session affinity, no load balancers, no
// external addresses.
func serviceNotDone(path *field.Path, s *api.ServiceSpec) field.ErrorList {
	r := &refusals{at: path, why: notDoneService}
	if len(s.ClusterIPs) > 1 {
		r.errs = append(r.errs, field.TooMany(path.Child("clusterIPs"), len(s.ClusterIPs), 1))
	}
	for i, f := range s.IPFamilies {
		if f != corev1.IPv4Protocol {
			r.errs = append(r.errs, field.NotSupported(path.Child("ipFamilies").Index(i), f, []corev1.IPFamily{corev1.IPv4Protocol}))
		}
	}
	if p := s.IPFamilyPolicy; p != nil && *p == corev1.IPFamilyPolicyRequireDualStack {
		r.errs = append(r.errs, field.NotSupported(path.Child("ipFamilyPolicy"), *p,
			[]corev1.IPFamilyPolicy{corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack}))
	}
	if p := s.InternalTrafficPolicy; p != nil && *p != corev1.ServiceInternalTrafficPolicyCluster {
		r.errs = append(r.errs, field.NotSupported(path.Child("internalTrafficPolicy"), *p,
			[]corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster}))
	}
	if p := s.ExternalTrafficPolicy; p != "" && p != corev1.ServiceExternalTrafficPolicyCluster {
		r.errs = append(r.errs, field.NotSupported(path.Child("externalTrafficPolicy"), p,
			[]corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster}))
	}
	if a := s.SessionAffinity; a != "" && a != corev1.ServiceAffinityNone {
		r.errs = append(r.errs, field.NotSupported(path.Child("sessionAffinity"), a, []corev1.ServiceAffinity{corev1.ServiceAffinityNone}))
	}
	r.forbid(s.SessionAffinityConfig != nil && s.SessionAffinity == corev1.ServiceAffinityNone, "sessionAffinityConfig", "there is no session affinity")
	r.forbid(len(s.ExternalIPs) > 0, "externalIPs", "Services are reached at their cluster IP and node ports")
	r.forbid(s.ExternalName != "" || s.Type == string(corev1.ServiceTypeExternalName), "externalName", "the cluster DNS does not alias names")
	r.forbid(s.Type == string(corev1.ServiceTypeLoadBalancer), "type", "there are no load balancers; type NodePort serves on every node")
	r.forbid(s.HealthCheckNodePort != 0, "healthCheckNodePort", "there are no load balancers")
	r.forbid(s.AllocateLoadBalancerNodePorts != nil, "allocateLoadBalancerNodePorts", "there are no load balancers")
	r.forbid(s.LoadBalancerClass != nil, "loadBalancerClass", "there are no load balancers")
	r.forbid(s.LoadBalancerIP != "", "loadBalancerIP", "there are no load balancers")
	r.forbid(len(s.LoadBalancerSourceRanges) > 0, "loadBalancerSourceRanges", "there are no load balancers")
	return r.errs
}
