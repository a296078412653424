// Package podstatus reads what a pod's status says, as Kubernetes'
// podutil does, for the controllers and runners that act on it.
package podstatus

import "minik8s/pkg/api"

// IsReady says whether the pod's Ready condition is True.
func IsReady(p *api.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == api.PodReady {
			return c.Status == api.ConditionTrue
		}
	}
	return false
}
