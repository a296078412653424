package scheduler

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"minik8s/pkg/api"
	"minik8s/pkg/nodecondition"
)

// nodeInfo is a node as scheduling sees it: what it offers and what the
// pods placed on it hold.
type nodeInfo struct {
	node    *api.Node
	alloc   resources
	maxPods int64
	used    *nodeUsage
	// matchable is the node for Kubernetes' matchers (nil: make one).
	matchable *corev1.Node
}

// asMatchable is the node as Kubernetes' affinity matchers take it.
func (ni *nodeInfo) asMatchable() *corev1.Node {
	if ni.matchable == nil {
		ni.matchable = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ni.node.Name, Labels: ni.node.Labels}}
	}
	return ni.matchable
}

// A filter rejects a node for a pod, saying why in words that are counted
// in the pod's Unschedulable message; nil means the pod fits.
type filter func(pi *podInfo, ni *nodeInfo) []string

// Reasons a node is rejected, as Kubernetes words them.
const (
	reasonNotReady      = "node(s) were not ready"
	reasonUnschedulable = "node(s) were unschedulable"
	reasonNodeSelector  = "node(s) didn't match node selector"
	reasonNodeAffinity  = "node(s) didn't match Pod's node affinity/selector"
	reasonPorts         = "node(s) didn't have free ports for the requested pod ports"
	reasonCPU           = "Insufficient cpu"
	reasonMemory        = "Insufficient memory"
	reasonPods          = "Too many pods"
)

// filters run in order; the first that rejects a node gives the reasons.
var filters = []filter{nodeReady, nodeSchedulable, taintToleration, nodeSelector, nodeAffinity, volumeBinding, hostPorts, fitsResources, topologySpread, interPodAffinity}

func nodeReady(_ *podInfo, ni *nodeInfo) []string {
	if nodecondition.ReadyStatus(ni.node) == api.ConditionTrue {
		return nil
	}
	return []string{reasonNotReady}
}

// nodeSchedulable keeps pods off a cordoned node, but those tolerating
// its unschedulable taint (a DaemonSet's), as Kubernetes' NodeUnschedulable
// plugin does.
func nodeSchedulable(pi *podInfo, ni *nodeInfo) []string {
	if !ni.node.Spec.Unschedulable {
		return nil
	}
	cordon := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if v1helper.TolerationsTolerateTaint(klog.Background(), pi.pod.Spec.Tolerations, cordon, true) {
		return nil
	}
	return []string{reasonUnschedulable}
}

func nodeSelector(pi *podInfo, ni *nodeInfo) []string {
	for k, v := range pi.pod.Spec.NodeSelector {
		if got, ok := ni.node.Labels[k]; !ok || got != v {
			return []string{reasonNodeSelector}
		}
	}
	return nil
}

// taintToleration keeps a pod off a node with a NoSchedule taint it does
// not tolerate, by Kubernetes' own matcher (PreferNoSchedule is a
// preference; NoExecute taints are refused by validation).
func taintToleration(pi *podInfo, ni *nodeInfo) []string {
	if len(ni.node.Spec.Taints) == 0 {
		return nil
	}
	taint, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), ni.node.Spec.Taints, pi.pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, true)
	if untolerated {
		return []string{fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)}
	}
	return nil
}

// nodeAffinity: the node matches one of the terms of the pod's required
// node affinity, by Kubernetes' own matcher (labels and metadata.name).
func nodeAffinity(pi *podInfo, ni *nodeInfo) []string {
	if pi.affinity == nil {
		return nil
	}
	if ok, _ := pi.affinity.Match(ni.asMatchable()); !ok {
		return []string{reasonNodeAffinity}
	}
	return nil
}

// hostPorts keeps apart pods taking the same port of a node. Container
// ports count only where pods share the node's network (a node that does
// not say it gives pods their own).
func hostPorts(pi *podInfo, ni *nodeInfo) []string {
	shared := ni.node.Labels[api.LabelPodNetwork] != api.PodNetworkOwn
	for _, hp := range pi.ports {
		if hp.ifShared && !shared {
			continue
		}
		for _, ifShared := range []bool{false, true} {
			other := hostPort{protocol: hp.protocol, port: hp.port, ifShared: ifShared}
			if (!ifShared || shared) && ni.used.ports[other] > 0 {
				return []string{reasonPorts}
			}
		}
	}
	return nil
}

func fitsResources(pi *podInfo, ni *nodeInfo) []string {
	var out []string
	if pi.req.milliCPU > 0 && ni.used.req.milliCPU+pi.req.milliCPU > ni.alloc.milliCPU {
		out = append(out, reasonCPU)
	}
	if pi.req.memory > 0 && ni.used.req.memory+pi.req.memory > ni.alloc.memory {
		out = append(out, reasonMemory)
	}
	if ni.maxPods > 0 && ni.used.pods+1 > ni.maxPods {
		out = append(out, reasonPods)
	}
	return out
}

// feasible returns the nodes the pod fits on, and for the others how many
// were rejected for each reason.
func feasible(pi *podInfo, nodes []*nodeInfo) ([]*nodeInfo, map[string]int) {
	var fit []*nodeInfo
	reasons := map[string]int{}
nodes:
	for _, ni := range nodes {
		for _, f := range filters {
			if why := f(pi, ni); len(why) > 0 {
				for _, r := range why {
					reasons[r]++
				}
				continue nodes
			}
		}
		fit = append(fit, ni)
	}
	return fit, reasons
}

// unschedulableMessage says why no node fits, most common reason first:
// "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) didn't match node selector."
func unschedulableMessage(total int, reasons map[string]int) string {
	if total == 0 {
		return "0/0 nodes are available: no nodes are registered."
	}
	words := make([]string, 0, len(reasons))
	for r := range reasons {
		words = append(words, r)
	}
	sort.Slice(words, func(i, j int) bool {
		if reasons[words[i]] != reasons[words[j]] {
			return reasons[words[i]] > reasons[words[j]]
		}
		return words[i] < words[j]
	})
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = fmt.Sprintf("%d %s", reasons[w], w)
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", total, strings.Join(parts, ", "))
}
