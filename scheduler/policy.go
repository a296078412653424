package scheduler

import (
	"fmt"
	"sort"
)

// Policy picks one of the nodes a pod fits on.
type Policy interface {
	Pick(pi *podInfo, fit []*nodeInfo) *nodeInfo
}

// Policy names, as --policy takes them.
const (
	PolicyLeastAllocated = "least-allocated"
	PolicyRoundRobin     = "round-robin"
)

// NewPolicy returns the policy of that name ("" is least-allocated).
func NewPolicy(name string) (Policy, error) {
	switch name {
	case "", PolicyLeastAllocated:
		return leastAllocated{}, nil
	case PolicyRoundRobin:
		return &roundRobin{}, nil
	}
	return nil, fmt.Errorf("unknown scheduling policy %q (want %s or %s)", name, PolicyLeastAllocated, PolicyRoundRobin)
}

// leastAllocated prefers the node with the largest share of cpu and memory
// left once the pod is placed, spreading load, and what the pod prefers
// (score.go: its preferred node affinity, nodes without PreferNoSchedule
// taints it does not tolerate); ties go to the node with fewer pods, then
// by name.
type leastAllocated struct{}

func (leastAllocated) Pick(pi *podInfo, fit []*nodeInfo) *nodeInfo {
	var best *nodeInfo
	var bestScore float64
	all := scores(pi, fit)
	for i, ni := range fit {
		s := all[i]
		if best == nil || s > bestScore ||
			(s == bestScore && (ni.used.pods < best.used.pods ||
				(ni.used.pods == best.used.pods && ni.node.Name < best.node.Name))) {
			best, bestScore = ni, s
		}
	}
	return best
}

// leastAllocatedScore is the mean over cpu and memory of the free fraction
// after placing the pod, in [0, 1]. It counts empty requests as the
// Kubernetes defaults so that pods asking for nothing spread too.
func leastAllocatedScore(pi *podInfo, ni *nodeInfo) float64 {
	free := func(alloc, used int64) float64 {
		if alloc <= 0 || used >= alloc {
			return 0
		}
		return float64(alloc-used) / float64(alloc)
	}
	cpu := free(ni.alloc.milliCPU, ni.used.nonZero.milliCPU+pi.nonZero.milliCPU)
	mem := free(ni.alloc.memory, ni.used.nonZero.memory+pi.nonZero.memory)
	return (cpu + mem) / 2
}

// roundRobin takes the nodes in name order, each pod the next node after
// the last one chosen that fits.
type roundRobin struct {
	last string
}

func (r *roundRobin) Pick(_ *podInfo, fit []*nodeInfo) *nodeInfo {
	if len(fit) == 0 {
		return nil
	}
	sorted := append([]*nodeInfo(nil), fit...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].node.Name < sorted[j].node.Name })
	pick := sorted[0]
	for _, ni := range sorted {
		if ni.node.Name > r.last {
			pick = ni
			break
		}
	}
	r.last = pick.node.Name
	return pick
}
