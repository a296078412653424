package disruption

import (
	"fmt"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/budget"
	"minik8s/pkg/owner"
	"minik8s/pkg/podstatus"
	"minik8s/pkg/rollout"
)

// scaleFunc is the desired replicas of a pod's controller, under a key
// naming that controller (pods of one Deployment share it).
type scaleFunc func(p *api.Pod, ref *api.OwnerReference) (key string, replicas int32, err error)

// Status is the status budget pdb should have over its pods (those it
// selects) at now, as Kubernetes' disruption controller computes it, and
// when to look again (an evicted pod's deletion timing out). An error
// (a controller whose scale cannot be read, a bound that cannot be
// resolved) gives a status allowing no disruption, saying why.
func Status(pdb *api.PodDisruptionBudget, pods []*api.Pod, scale scaleFunc, now time.Time) (api.PodDisruptionBudgetStatus, time.Duration, error) {
	st := api.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, Conditions: cloneConditions(pdb.Status.Conditions)}
	expected, desired, err := expectedAndDesired(pdb, pods, scale)
	if err != nil {
		st.DisruptionsAllowed = 0
		st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods = pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods
		st.DisruptedPods = pdb.Status.DisruptedPods
		budget.SetCondition(&st, api.Condition{Type: api.DisruptionAllowedCondition, Status: api.ConditionFalse,
			Reason: api.PDBSyncFailedReason, Message: err.Error(), ObservedGeneration: pdb.Generation}, now)
		return st, 0, err
	}
	disrupted, recheck := stillDisrupted(pdb, pods, now)
	healthy := int32(0)
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if _, going := disrupted[p.Name]; going {
			continue
		}
		if podstatus.IsReady(p) {
			healthy++
		}
	}
	st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods = healthy, desired, expected
	if len(disrupted) > 0 {
		st.DisruptedPods = disrupted
	}
	if allowed := healthy - desired; expected > 0 && allowed > 0 {
		st.DisruptionsAllowed = allowed
	}
	probe := &api.PodDisruptionBudget{Status: st}
	budget.SetAllowedCondition(probe, now)
	return probe.Status, recheck, nil
}

// expectedAndDesired: a minAvailable count wants that many healthy of the
// pods there are; a percentage, or maxUnavailable, is of the pods their
// controllers want (rounded up), as in Kubernetes.
func expectedAndDesired(pdb *api.PodDisruptionBudget, pods []*api.Pod, scale scaleFunc) (expected, desired int32, err error) {
	spec := pdb.Spec
	switch {
	case spec.MaxUnavailable != nil:
		if expected, err = expectedScale(pods, scale); err != nil {
			return 0, 0, err
		}
		maxUnavailable, err := rollout.Scaled(spec.MaxUnavailable, "0", int(expected), true)
		if err != nil {
			return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
		}
		return expected, max(expected-int32(maxUnavailable), 0), nil
	case spec.MinAvailable != nil && isPercent(*spec.MinAvailable):
		if expected, err = expectedScale(pods, scale); err != nil {
			return 0, 0, err
		}
		minAvailable, err := rollout.Scaled(spec.MinAvailable, "0", int(expected), true)
		if err != nil {
			return 0, 0, fmt.Errorf("minAvailable: %w", err)
		}
		return expected, int32(minAvailable), nil
	case spec.MinAvailable != nil:
		minAvailable, err := rollout.Scaled(spec.MinAvailable, "0", 0, true)
		if err != nil {
			return 0, 0, fmt.Errorf("minAvailable: %w", err)
		}
		return int32(len(pods)), int32(minAvailable), nil
	}
	return 0, 0, fmt.Errorf("neither minAvailable nor maxUnavailable is set")
}

func isPercent(v api.IntOrString) bool {
	s := string(v)
	return len(s) > 0 && s[len(s)-1] == '%'
}

// expectedScale sums the scale of the pods' controllers, each once. Pods
// of no controller are not expected (Kubernetes warns of them and counts
// them out too).
func expectedScale(pods []*api.Pod, scale scaleFunc) (int32, error) {
	seen := map[string]bool{}
	var total int32
	for _, p := range pods {
		ref := owner.ControllerOf(&p.ObjectMeta)
		if ref == nil {
			continue
		}
		key, n, err := scale(p, ref)
		if err != nil {
			return 0, err
		}
		if !seen[key] {
			seen[key] = true
			total += n
		}
	}
	return total, nil
}

// stillDisrupted keeps the evictions not yet seen through: pods still
// there, not yet deleting, evicted less than DeletionTimeout ago. recheck
// is when the first of those times out.
func stillDisrupted(pdb *api.PodDisruptionBudget, pods []*api.Pod, now time.Time) (map[string]time.Time, time.Duration) {
	out := map[string]time.Time{}
	var recheck time.Duration
	for _, p := range pods {
		at, ok := pdb.Status.DisruptedPods[p.Name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		left := at.Add(DeletionTimeout).Sub(now)
		if left <= 0 {
			continue // not deleted after all: it counts again
		}
		out[p.Name] = at
		if recheck == 0 || left < recheck {
			recheck = left
		}
	}
	return out, recheck
}

func cloneConditions(cs []api.Condition) []api.Condition {
	if cs == nil {
		return nil
	}
	return append([]api.Condition(nil), cs...)
}
