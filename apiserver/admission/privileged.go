package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// A pod that reaches into its node (hostPath, host ports, the host
// network, and whatever else Kubernetes' Pod Security "baseline" level
// forbids: privileged containers, capabilities beyond the default set,
// seccomp Unconfined, unsafe sysctls) is admitted only for users allowed
// to create privileged pods, whatever object carries it (a Pod, any
// template).

// privilegedAttrs is the permission privileged pods need: create on
// pods/privileged (cluster-admin has it; the controller manager too, as
// it creates the pods of templates whose writers were checked here).
func privilegedAttrs(u rbac.User, ns string) rbac.Attributes {
	return rbac.Attributes{User: u, ResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "privileged", Namespace: ns}
}

// privileges lists how spec reaches into its node.
func privileges(spec *api.PodSpec) []string {
	var out []string
	if spec.HostNetwork {
		out = append(out, "hostNetwork")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			out = append(out, fmt.Sprintf("hostPath volume %q (%s)", v.Name, v.HostPath.Path))
		}
	}
	for _, c := range append(append([]api.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, fmt.Sprintf("host port %d of container %q", p.HostPort, c.Name))
			}
		}
	}
	return append(out, beyondBaseline(spec)...)
}

// ownChecks are the baseline checks privileges words itself (hostPID and
// hostIPC, the rest of hostNamespaces, are refused by validation).
var ownChecks = map[policy.CheckID]bool{"hostNamespaces": true, "hostPathVolumes": true, "hostPorts": true}

// baseline evaluates Kubernetes' Pod Security "baseline" checks but ours.
var baseline = sync.OnceValues(func() (policy.Evaluator, error) {
	var checks []policy.Check
	for _, c := range policy.DefaultChecks() {
		if c.Level == psapi.LevelBaseline && !ownChecks[c.ID] {
			checks = append(checks, c)
		}
	}
	return policy.NewEvaluator(checks, nil)
})

// beyondBaseline lists what spec asks that the baseline level forbids,
// as Pod Security admission words it ("privileged (container "c" must
// not set securityContext.privileged=true)").
func beyondBaseline(spec *api.PodSpec) []string {
	ev, err := baseline()
	var ps corev1.PodSpec
	if err == nil {
		err = convertSpec(spec, &ps)
	}
	if err != nil {
		// Unjudgeable is privileged: the check must not open by failing.
		return []string{"a pod spec Pod Security cannot read: " + err.Error()}
	}
	var out []string
	for _, r := range ev.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelBaseline, Version: psapi.LatestVersion()}, &metav1.ObjectMeta{}, &ps) {
		if r.Allowed {
			continue
		}
		if r.ForbiddenDetail != "" {
			out = append(out, r.ForbiddenReason+" ("+r.ForbiddenDetail+")")
		} else {
			out = append(out, r.ForbiddenReason)
		}
	}
	return out
}

// convertSpec reads our pod spec as Kubernetes' (their JSON is the same).
func convertSpec(spec *api.PodSpec, out *corev1.PodSpec) error {
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// PodSpecs admits every pod spec obj, of resource res, carries
// (PodSpecsOf: a Pod's, a template's, whatever the kind) against user u,
// as if u created those pods: one that reaches into the node needs
// pods/privileged, which allows judges. old is the object being replaced
// (nil on create): a spec it carries unchanged at the same place passes,
// so that a user may scale or relabel an admin's privileged workload, but
// not change what its pods run.
func PodSpecs(res api.Resource, u rbac.User, allows func(rbac.Attributes) bool, old, obj api.Object) error {
	specs := PodSpecsOf(obj)
	if len(specs) == 0 {
		return nil
	}
	var before map[string]*api.PodSpec
	for _, at := range specs {
		p := privileges(at.Spec)
		if len(p) == 0 {
			continue
		}
		if old != nil && before == nil {
			before = map[string]*api.PodSpec{}
			for _, o := range PodSpecsOf(old) {
				before[o.Path] = o.Spec
			}
		}
		if prev, ok := before[at.Path]; ok && samePodSpec(prev, at.Spec) {
			continue
		}
		meta := obj.GetObjectMeta()
		if allows(privilegedAttrs(u, meta.Namespace)) {
			return nil
		}
		return fmt.Errorf("%s %q is forbidden: User %q may not create privileged pods (%s reach into the node, at %s): "+
			"that needs create on pods/privileged, which cluster-admin has: %w",
			res.Name, meta.Name, u.Name, strings.Join(p, ", "), at.Path, errdefs.ErrForbidden)
	}
	return nil
}

// samePodSpec compares two specs as stored (JSON, where an empty list and
// none are the same).
func samePodSpec(a, b *api.PodSpec) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
