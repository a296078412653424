package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// What a pod prefers, scored as kube-scheduler's plugins score it, each
// normalized to 0..maxScore over the feasible nodes and summed with
// kube-scheduler's default weights: NodeResourcesFit (least allocated) 1,
// TaintToleration 3 (fewer untolerated PreferNoSchedule taints), and
// NodeAffinity 2 (the weights of the preferred terms a node matches),
// PodTopologySpread 2 (fewer matching pods in the node's domains, for
// ScheduleAnyway constraints) and InterPodAffinity 2 (the weights of the
// preferred pod (anti-)affinity terms the pods of the node's domains meet,
// podaffinity.go; min-max normalized, as kube-scheduler does, since they
// may be negative).

const (
	maxScore       = 100
	weightFit      = 1
	weightTaints   = 3
	weightAffinity = 2
)

// preferredTerms is the pod's preferred node affinity, nil if none.
func preferredTerms(pi *podInfo) *nodeaffinity.PreferredSchedulingTerms {
	a := pi.pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return nil // validation refused such a pod; nothing to prefer
	}
	return terms
}

// intolerablePreferNoSchedule counts the node's PreferNoSchedule taints the
// pod does not tolerate.
func intolerablePreferNoSchedule(pi *podInfo, ni *nodeInfo) int64 {
	var n int64
	for i := range ni.node.Spec.Taints {
		t := &ni.node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule &&
			!v1helper.TolerationsTolerateTaint(klog.Background(), pi.pod.Spec.Tolerations, t, true) {
			n++
		}
	}
	return n
}

// scores are the feasible nodes' total scores, in fit's order.
func scores(pi *podInfo, fit []*nodeInfo) []float64 {
	terms := preferredTerms(pi)
	taints := make([]int64, len(fit))
	affinity := make([]int64, len(fit))
	var maxTaints, maxAffinity int64
	for i, ni := range fit {
		taints[i] = intolerablePreferNoSchedule(pi, ni)
		maxTaints = max(maxTaints, taints[i])
		if terms != nil {
			affinity[i] = terms.Score(ni.asMatchable())
			maxAffinity = max(maxAffinity, affinity[i])
		}
	}
	spread := make([]int, len(fit))
	minSpread, maxSpread, spreading := 0, 0, false
	for i, ni := range fit {
		n, ok := spreadPenalty(pi, ni)
		if !ok {
			break
		}
		spread[i], spreading = n, true
		if i == 0 || n < minSpread {
			minSpread = n
		}
		maxSpread = max(maxSpread, n)
	}
	var podAff []int64
	var minPodAff, maxPodAff int64
	if pi.podAffinity != nil && len(pi.podAffinity.score) > 0 {
		podAff = make([]int64, len(fit))
		for i, ni := range fit {
			podAff[i] = podAffinityScore(pi, ni)
			if i == 0 || podAff[i] < minPodAff {
				minPodAff = podAff[i]
			}
			if i == 0 || podAff[i] > maxPodAff {
				maxPodAff = podAff[i]
			}
		}
	}
	out := make([]float64, len(fit))
	for i, ni := range fit {
		s := weightFit * maxScore * leastAllocatedScore(pi, ni)
		if maxTaints > 0 {
			s += weightTaints * float64(maxScore*(maxTaints-taints[i])) / float64(maxTaints)
		} else {
			s += weightTaints * maxScore
		}
		if maxAffinity > 0 {
			s += weightAffinity * float64(maxScore*affinity[i]) / float64(maxAffinity)
		}
		if spreading {
			if maxSpread > minSpread {
				s += weightSpread * float64(maxScore*(maxSpread-spread[i])) / float64(maxSpread-minSpread)
			} else {
				s += weightSpread * maxScore
			}
		}
		if maxPodAff > minPodAff {
			s += weightPodAffinity * float64(maxScore*(podAff[i]-minPodAff)) / float64(maxPodAff-minPodAff)
		}
		out[i] = s
	}
	return out
}
