// Package budget holds the rules of PodDisruptionBudgets both the
// apiserver's eviction and the disruption controller read.
package budget

import (
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/labels"
)

// Selects says whether the budget covers the pod: a budget of the pod's
// namespace whose selector matches its labels. A nil or empty selector
// covers no pod, as Kubernetes reads it (not every pod).
func Selects(pdb *api.PodDisruptionBudget, pod *api.Pod) bool {
	if pdb.Namespace != pod.Namespace {
		return false
	}
	sel, err := labels.FromLabelSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(pod.Labels)
}

// SetAllowedCondition sets the budget's DisruptionAllowed condition from
// its DisruptionsAllowed, as Kubernetes' pdb helper does: True
// (SufficientPods) while an eviction may go, False (InsufficientPods)
// when none may; the transition time moves only when the status does.
func SetAllowedCondition(pdb *api.PodDisruptionBudget, now time.Time) {
	cond := api.Condition{Type: api.DisruptionAllowedCondition, Status: api.ConditionTrue,
		Reason: api.PDBSufficientPodsReason, ObservedGeneration: pdb.Status.ObservedGeneration}
	if pdb.Status.DisruptionsAllowed <= 0 {
		cond.Status, cond.Reason = api.ConditionFalse, api.PDBInsufficientPodsReason
	}
	SetCondition(&pdb.Status, cond, now)
}

// SetCondition puts cond among the status's conditions, keeping the
// transition time of one of the same type and status.
func SetCondition(s *api.PodDisruptionBudgetStatus, cond api.Condition, now time.Time) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type != cond.Type {
			continue
		}
		if c.Status == cond.Status && c.LastTransitionTime != nil {
			cond.LastTransitionTime = c.LastTransitionTime
		} else {
			t := now.UTC().Truncate(time.Second)
			cond.LastTransitionTime = &t
		}
		*c = cond
		return
	}
	t := now.UTC().Truncate(time.Second)
	cond.LastTransitionTime = &t
	s.Conditions = append(s.Conditions, cond)
}
