package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Pod topology spread, as kube-scheduler's PodTopologySpread plugin does
// it: for each of the pod's topologySpreadConstraints, the pods of its
// namespace matching the constraint's selector are counted per domain (a
// value of topologyKey) over the eligible nodes (those with the key and,
// by default, matching the pod's node selector and required node
// affinity). A DoNotSchedule constraint keeps the pod off a node whose
// domain would then hold more than maxSkew above the emptiest domain (0
// when fewer domains than minDomains exist); a ScheduleAnyway one scores
// nodes of emptier domains higher.

const (
	reasonSpread             = "node(s) didn't match pod topology spread constraints"
	reasonSpreadMissingLabel = "node(s) didn't match pod topology spread constraints (missing required label)"
	weightSpread             = 2
)

type spreadConstraint struct {
	key        string
	maxSkew    int
	minDomains int
	hard       bool
	selector   labels.Selector
	// counts are the matching pods per domain of the eligible nodes.
	counts map[string]int
	// self is 1 when the pod matches its own selector.
	self int
}

// minCount is the emptiest domain's count (0 with fewer than minDomains).
func (c *spreadConstraint) minCount() int {
	if len(c.counts) < c.minDomains {
		return 0
	}
	first, m := true, 0
	for _, n := range c.counts {
		if first || n < m {
			first, m = false, n
		}
	}
	return m
}

// newSpread counts, for each constraint of the pod, the matching pods
// placed on the eligible nodes. nodes are every node; placed are the
// placements of the scheduler's cache (read under its lock).
func newSpread(pi *podInfo, nodes []*nodeInfo, placed map[string]*placement) []*spreadConstraint {
	pod := pi.pod
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		return nil
	}
	var out []*spreadConstraint
	for _, tc := range pod.Spec.TopologySpreadConstraints {
		sel, err := metav1.LabelSelectorAsSelector(tc.LabelSelector)
		if err != nil {
			continue // validation refused such a pod
		}
		for _, k := range tc.MatchLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				if r, err := labels.NewRequirement(k, selection.Equals, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		c := &spreadConstraint{key: tc.TopologyKey, maxSkew: int(tc.MaxSkew), hard: tc.WhenUnsatisfiable == corev1.DoNotSchedule,
			selector: sel, counts: map[string]int{}}
		if tc.MinDomains != nil {
			c.minDomains = int(*tc.MinDomains)
		}
		if tc.LabelSelector != nil && sel.Matches(labels.Set(pod.Labels)) {
			c.self = 1
		}
		honourAffinity := tc.NodeAffinityPolicy == nil || *tc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		honourTaints := tc.NodeTaintsPolicy != nil && *tc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		domainOf := map[string]string{} // eligible node -> domain
		for _, ni := range nodes {
			v, ok := ni.node.Labels[tc.TopologyKey]
			if !ok {
				continue
			}
			if honourAffinity && (len(nodeSelector(pi, ni)) > 0 || len(nodeAffinity(pi, ni)) > 0) {
				continue
			}
			if honourTaints && len(taintToleration(pi, ni)) > 0 {
				continue
			}
			domainOf[ni.node.Name] = v
			c.counts[v] += 0
		}
		for _, p := range placed {
			other := p.info.pod
			if other.Namespace != pod.Namespace || other.UID == pod.UID || other.DeletionTimestamp != nil {
				continue
			}
			if d, ok := domainOf[p.node]; ok && tc.LabelSelector != nil && sel.Matches(labels.Set(other.Labels)) {
				c.counts[d]++
			}
		}
		out = append(out, c)
	}
	return out
}

// topologySpread is the filter of the pod's DoNotSchedule constraints.
func topologySpread(pi *podInfo, ni *nodeInfo) []string {
	for _, c := range pi.spread {
		if !c.hard {
			continue
		}
		v, ok := ni.node.Labels[c.key]
		if !ok {
			return []string{reasonSpreadMissingLabel}
		}
		if c.counts[v]+c.self-c.minCount() > c.maxSkew {
			return []string{reasonSpread}
		}
	}
	return nil
}

// spreadPenalty is how many matching pods the node's domains hold over
// the pod's ScheduleAnyway constraints (a node without a constraint's key
// counts as the fullest); ok is false when the pod has none.
func spreadPenalty(pi *podInfo, ni *nodeInfo) (n int, ok bool) {
	for _, c := range pi.spread {
		if c.hard {
			continue
		}
		ok = true
		v, has := ni.node.Labels[c.key]
		if !has {
			most := 0
			for _, k := range c.counts {
				most = max(most, k)
			}
			n += most + 1
			continue
		}
		n += c.counts[v]
	}
	return n, ok
}
