package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/rollout"
)

// syncStatus writes the Deployment's counts and conditions: Available
// (desired-maxUnavailable pods available) and Progressing (the rollout
// moved within progressDeadlineSeconds, is complete, or is paused), as
// kubectl rollout status reads them. An unfinished rollout is looked at
// again when its deadline would pass.
func (dc *Controller) syncStatus(ctx context.Context, d *api.Deployment, newRS *rsState, olds []*rsState, unavailable int) error {
	now := time.Now().UTC().Truncate(time.Second)
	st := api.DeploymentStatus{ObservedGeneration: d.Generation, CollisionCount: d.Status.CollisionCount}
	all := olds
	if newRS != nil {
		all = append([]*rsState{newRS}, olds...)
		st.UpdatedReplicas = newRS.rs.Status.Replicas
	}
	for _, s := range all {
		st.Replicas += s.rs.Status.Replicas
		st.ReadyReplicas += s.rs.Status.ReadyReplicas
		st.AvailableReplicas += s.rs.Status.AvailableReplicas
	}
	desired := int32(rollout.Replicas(d))
	st.UnavailableReplicas = max(desired-st.AvailableReplicas, 0)
	conds := append([]api.DeploymentCondition(nil), d.Status.Conditions...)

	if st.AvailableReplicas >= desired-int32(unavailable) {
		conds = setCondition(conds, now, api.DeploymentAvailable, api.ConditionTrue, api.ReasonMinimumReplicasAvailable, "Deployment has minimum availability.")
	} else {
		conds = setCondition(conds, now, api.DeploymentAvailable, api.ConditionFalse, api.ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.")
	}
	rsName := ""
	if newRS != nil {
		rsName = newRS.rs.Name
	}
	complete := newRS != nil && st.UpdatedReplicas == desired && st.Replicas == desired && st.AvailableReplicas >= desired &&
		newRS.rs.Status.ObservedGeneration >= newRS.rs.Generation
	progressed := st.UpdatedReplicas != d.Status.UpdatedReplicas || st.Replicas != d.Status.Replicas ||
		st.AvailableReplicas != d.Status.AvailableReplicas || st.ReadyReplicas != d.Status.ReadyReplicas ||
		d.Status.ObservedGeneration != d.Generation
	deadline := time.Duration(rollout.DefaultProgressDeadlineSeconds) * time.Second
	if d.Spec.ProgressDeadlineSeconds != nil {
		deadline = time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	}
	prev := condition(conds, api.DeploymentProgressing)
	switch {
	case d.Spec.Paused:
		conds = setCondition(conds, now, api.DeploymentProgressing, api.ConditionUnknown, api.ReasonDeploymentPaused, "Deployment is paused")
	case complete:
		conds = setCondition(conds, now, api.DeploymentProgressing, api.ConditionTrue, api.ReasonNewReplicaSetAvailable,
			fmt.Sprintf("ReplicaSet %q has successfully progressed.", rsName))
	case progressed || prev == nil || prev.Reason == api.ReasonDeploymentPaused || prev.Reason == api.ReasonNewReplicaSetAvailable:
		// Each step of progress restarts the deadline.
		conds = touchCondition(conds, now, api.DeploymentProgressing, api.ConditionTrue, api.ReasonReplicaSetUpdated,
			fmt.Sprintf("ReplicaSet %q is progressing.", rsName))
		dc.queue.AddAfter(cache.Key(d), deadline+time.Second)
	case prev.Reason != api.ReasonProgressDeadlineExceeded && prev.LastUpdateTime != nil && now.Sub(*prev.LastUpdateTime) > deadline:
		conds = setCondition(conds, now, api.DeploymentProgressing, api.ConditionFalse, api.ReasonProgressDeadlineExceeded,
			fmt.Sprintf("ReplicaSet %q has timed out progressing.", rsName))
		events.Eventf(dc.events, d, api.EventTypeNormal, api.ReasonProgressDeadlineExceeded, "Deployment %q has timed out progressing", d.Name)
	case prev.LastUpdateTime != nil && prev.Reason != api.ReasonProgressDeadlineExceeded:
		dc.queue.AddAfter(cache.Key(d), prev.LastUpdateTime.Add(deadline).Sub(now)+time.Second)
	}
	st.Conditions = conds
	if reflect.DeepEqual(st, d.Status) {
		return nil
	}
	d.Status = st
	_, err := dc.api.UpdateDeploymentStatus(ctx, d)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating status of deployment %s: %w", cache.Key(d), err)
	}
	return nil
}

func condition(conds []api.DeploymentCondition, typ string) *api.DeploymentCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// setCondition sets a condition; its times move only when what it says
// changes (the transition time only when its status does).
func setCondition(conds []api.DeploymentCondition, now time.Time, typ, status, reason, msg string) []api.DeploymentCondition {
	if c := condition(conds, typ); c != nil && c.Status == status && c.Reason == reason && c.Message == msg {
		return conds
	}
	return touchCondition(conds, now, typ, status, reason, msg)
}

// touchCondition sets a condition and its update time.
func touchCondition(conds []api.DeploymentCondition, now time.Time, typ, status, reason, msg string) []api.DeploymentCondition {
	c := condition(conds, typ)
	if c == nil {
		return append(conds, api.DeploymentCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastUpdateTime: &now, LastTransitionTime: &now})
	}
	if c.Status != status {
		c.LastTransitionTime = &now
	}
	c.Status, c.Reason, c.Message, c.LastUpdateTime = status, reason, msg, &now
	return conds
}
