package functions

import (
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/events"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/podstatus"
)

// syncReady sets the function's Ready condition from its pods, and
// records an Event when its pods start failing, or fail anew.
func (c *Controller) syncReady(f *api.Func, now time.Time) {
	prev := findCondition(f.Status.Conditions, api.FuncReady)
	next := readyCondition(f, c.pods.Lister().ListNamespace(f.Namespace, labels.SelectorFromSet(function.Selector(f.Name))), now)
	if next == nil {
		return
	}
	if next.Status == api.ConditionFalse && (prev == nil || prev.Status != api.ConditionFalse || prev.Message != next.Message) {
		events.Eventf(c.cfg.Events, f, api.EventTypeWarning, "FailedStart", "Pods of %s cannot start: %s: %s", f.Name, next.Reason, next.Message)
	}
	f.Status.Conditions = setCondition(f.Status.Conditions, next)
}

// readyCondition is the function's Ready condition as the pods of its
// current code show it: True once one is ready; False, with the reason,
// when none is, one cannot start and no other placed on a node may yet
// (the runners fail the calls waiting for a pod then, rather than let
// them wait out the cold start timeout);
// Unknown when a False one's pods are gone, so that the next call tries a
// fresh pod. Otherwise (nil) it stays as it was: a function at zero stays
// Ready.
func readyCondition(f *api.Func, pods []*api.Pod, now time.Time) *api.FuncCondition {
	prev := findCondition(f.Status.Conditions, api.FuncReady)
	hash := function.CodeHash(&f.Spec)
	var failure *function.StartFailure
	ready, progressing := false, false
	for _, p := range pods {
		// A pod of one call counts for a function of fresh pods (v1) only,
		// and still when its call has ended and it is on its way out.
		ofCall := p.Labels[function.LabelInstance] != ""
		if ofCall != (f.APIVersion == api.FuncAPIVersionV1) || p.Labels[function.LabelCode] != hash || (p.DeletionTimestamp != nil && !ofCall) ||
			function.EndedByNode(p) {
			continue
		}
		if podstatus.IsReady(p) {
			ready = true
			break
		}
		switch f := function.PodStartFailure(p); {
		case f != nil && failure == nil:
			failure = f
		case f == nil && p.Spec.NodeName != "":
			// Placed, and on its way: it may yet serve (a failure on one
			// node, a preRun fetch say, need not be one on another).
			progressing = true
		}
	}
	next := api.FuncCondition{Type: api.FuncReady, ObservedGeneration: f.Generation}
	switch {
	case ready:
		next.Status, next.Reason = api.ConditionTrue, "PodReady"
	case failure != nil && !progressing:
		next.Status, next.Reason, next.Message = api.ConditionFalse, failure.Reason, failure.Message
	case prev != nil && prev.Status == api.ConditionFalse:
		next.Status, next.Reason = api.ConditionUnknown, "Starting"
		next.Message = "no pod of the current code has started yet"
	default:
		return nil
	}
	if prev != nil && prev.Status == next.Status {
		next.LastTransitionTime = prev.LastTransitionTime
	} else {
		t := now.UTC()
		next.LastTransitionTime = &t
	}
	return &next
}

// setCondition puts cond in place of the condition of its type.
func setCondition(conds []api.FuncCondition, cond *api.FuncCondition) []api.FuncCondition {
	out := make([]api.FuncCondition, 0, len(conds)+1)
	for _, c := range conds {
		if c.Type != cond.Type {
			out = append(out, c)
		}
	}
	return append(out, *cond)
}

func findCondition(conds []api.FuncCondition, typ string) *api.FuncCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
