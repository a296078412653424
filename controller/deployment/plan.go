package deployment

import (
	"sort"

	"minik8s/pkg/api"
	"minik8s/pkg/rollout"
)

// The rollout arithmetic, as Kubernetes' deployment controller does it:
// the plan says how many replicas each ReplicaSet of a Deployment should
// have next, from their specs and available counts, touching nothing.

// rsState is what the plan needs of one ReplicaSet.
type rsState struct {
	rs        *api.ReplicaSet
	replicas  int // spec.replicas, as planned
	available int // status.availableReplicas
	current   int // status.replicas: pods that exist
}

func stateOf(rs *api.ReplicaSet) *rsState {
	n := 0
	if rs.Spec.Replicas != nil {
		n = int(*rs.Spec.Replicas)
	}
	return &rsState{rs: rs, replicas: n, available: int(rs.Status.AvailableReplicas), current: int(rs.Status.Replicas)}
}

// byRevision orders old ReplicaSets oldest first: they are scaled down,
// and cleaned up, in that order.
func byRevision(olds []*rsState) {
	sort.SliceStable(olds, func(i, j int) bool {
		ri, rj := rollout.Revision(olds[i].rs), rollout.Revision(olds[j].rs)
		if ri != rj {
			return ri < rj
		}
		return olds[i].rs.CreationTimestamp.Before(*olds[j].rs.CreationTimestamp)
	})
}

// planRolling plans one step of a rolling update towards desired pods of
// the new ReplicaSet: up by as many as maxSurge allows over desired, the
// old ones down by as many as keeps desired-maxUnavailable available
// (unavailable old pods first, as they count for nothing).
func planRolling(newRS *rsState, olds []*rsState, desired, surge, unavailable int) {
	byRevision(olds)
	all := func() int {
		n := newRS.replicas
		for _, o := range olds {
			n += o.replicas
		}
		return n
	}
	// Up; a Deployment scaled down takes its new set down at once.
	if newRS.replicas > desired {
		newRS.replicas = desired
	} else if up := min(desired+surge-all(), desired-newRS.replicas); up > 0 {
		newRS.replicas += up
	}
	// Down.
	minAvailable := desired - unavailable
	newUnavailable := max(newRS.replicas-newRS.available, 0)
	maxDown := all() - minAvailable - newUnavailable
	if maxDown <= 0 {
		return
	}
	// Old pods that are not available go first: removing them costs no
	// availability.
	for _, o := range olds {
		if maxDown <= 0 {
			break
		}
		down := min(max(o.replicas-o.available, 0), maxDown)
		o.replicas -= down
		maxDown -= down
	}
	available := newRS.available
	for _, o := range olds {
		available += min(o.available, o.replicas)
	}
	down := min(available-minAvailable, maxDown)
	for _, o := range olds {
		if down <= 0 {
			break
		}
		n := min(o.replicas, down)
		o.replicas -= n
		down -= n
	}
}

// planRecreate plans one step of a Recreate rollout: every old pod goes,
// and only once none is left does the new set get its pods.
func planRecreate(newRS *rsState, olds []*rsState, desired int) {
	left := 0
	for _, o := range olds {
		o.replicas = 0
		left += o.current
	}
	if left == 0 {
		newRS.replicas = desired
	}
}
