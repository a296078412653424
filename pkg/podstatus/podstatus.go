// Package podstatus reads what a pod's status says, as Kubernetes'
// podutil does, for the controllers and runners that act on it.
package podstatus

import (
	"time"

	"minik8s/pkg/api"
)

// IsReady says whether the pod's Ready condition is True.
func IsReady(p *api.Pod) bool {
	c := ReadyCondition(p)
	return c != nil && c.Status == api.ConditionTrue
}

// ReadyCondition is the pod's Ready condition, nil if it has none yet.
func ReadyCondition(p *api.Pod) *api.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == api.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// ReadySince says whether the pod is ready, and since when (the zero
// time when its condition says no time).
func ReadySince(p *api.Pod) (time.Time, bool) {
	c := ReadyCondition(p)
	if c == nil || c.Status != api.ConditionTrue {
		return time.Time{}, false
	}
	if c.LastTransitionTime != nil {
		return *c.LastTransitionTime, true
	}
	return time.Time{}, true
}

// Available says whether the pod is available at now (ready for at least
// minReady); wait, when it is ready but not yet available, is how long
// until it is.
func Available(p *api.Pod, minReady time.Duration, now time.Time) (ok bool, wait time.Duration) {
	since, ready := ReadySince(p)
	if !ready {
		return false, 0
	}
	if w := since.Add(minReady).Sub(now); minReady > 0 && w > 0 {
		return false, w
	}
	return true, 0
}
