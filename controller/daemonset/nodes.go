package daemonset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/names"
	"minik8s/pkg/owner"
)

// The taints a DaemonSet's pods tolerate whatever their template says, as
// Kubernetes' daemon controller adds them: a per-node agent keeps running
// on a node that is unreachable, not ready, short of resources or
// cordoned (it is often what the node needs to recover).
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// hostNetworkToleration is added for pods on the node's network, which
// need none of the pod network's.
var hostNetworkToleration = corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// placement says whether a DaemonSet's pod should be started on node
// (shouldRun) and whether one already there may stay (shouldStay), as
// Kubernetes' NodeShouldRunDaemonPod: the template's node name, node
// selector and required node affinity must match, and the node's
// NoSchedule taints be tolerated to start a pod, its NoExecute taints to
// keep one.
func placement(ds *api.DaemonSet, node *api.Node) (shouldRun, shouldStay bool) {
	spec := &ds.Spec.Template.Spec
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false, false
	}
	for k, v := range spec.NodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false, false
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		sel := nodeaffinity.NewLazyErrorNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels}}
		if ok, _ := sel.Match(n); !ok {
			return false, false
		}
	}
	tolerations := podTolerations(spec)
	untolerated := func(effects ...corev1.TaintEffect) bool {
		_, found := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, tolerations, func(t *corev1.Taint) bool {
			for _, e := range effects {
				if t.Effect == e {
					return true
				}
			}
			return false
		}, true)
		return found
	}
	if untolerated(corev1.TaintEffectNoExecute) {
		return false, false
	}
	return !untolerated(corev1.TaintEffectNoSchedule), true
}

// podTolerations are the template's tolerations and the daemon's own.
func podTolerations(spec *api.PodSpec) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), spec.Tolerations...)
	add := func(t corev1.Toleration) {
		for _, have := range out {
			if have.Key == t.Key && have.Effect == t.Effect && have.Operator == t.Operator && have.TolerationSeconds == nil {
				return
			}
		}
		out = append(out, t)
	}
	for _, t := range daemonTolerations {
		add(t)
	}
	if spec.HostNetwork {
		add(hostNetworkToleration)
	}
	return out
}

// newPod is the DaemonSet's pod for node: its template, labelled with the
// revision it was made from, tolerating the daemon's taints, and held to
// node by a required node affinity on its name, which the scheduler
// honours (the controller judged the node already, so the template's own
// required terms are replaced, as Kubernetes does).
func newPod(ds *api.DaemonSet, hash, node string) *api.Pod {
	tmpl := cache.DeepCopy(ds).Spec.Template
	labels := make(map[string]string, len(tmpl.Labels)+1)
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	labels[api.LabelControllerRevisionHash] = hash
	spec := tmpl.Spec
	spec.Tolerations = podTolerations(&spec)
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
	base := ds.Name
	if len(base) > maxBaseName {
		base = base[:maxBaseName]
	}
	return &api.Pod{
		ObjectMeta: api.ObjectMeta{
			Name:            names.Generate(base + "-"),
			Namespace:       ds.Namespace,
			Labels:          labels,
			Annotations:     tmpl.Annotations,
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.DaemonSetsResource, ds)},
		},
		Spec: spec,
	}
}

// maxBaseName keeps "<base>-xxxxx" within a name's 253 characters.
const maxBaseName = 253 - 6

// targetNode is the node a DaemonSet pod is on, or, not yet bound, the
// node its affinity holds it to.
func targetNode(p *api.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
