// Package podstatus reads what a pod's status says, as Kubernetes'
// podutil does, for the controllers and runners that act on it.
package podstatus

import "minik8s/pkg/api"

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
