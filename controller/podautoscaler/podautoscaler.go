// Package podautoscaler runs HorizontalPodAutoscalers: every sync period
// it reads the pods of each target (through its scale subresource's
// selector) and what they use (the metrics API) against what they
// request, asks Kubernetes' algorithm for a replica count, holds it to
// the behavior's stabilization windows and rate limits and to min/max,
// and writes it to the target's scale, with an event and the status.
package podautoscaler

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "horizontalpodautoscaler"

// DefaultSyncPeriod is how often every HPA is looked at, as Kubernetes'.
const DefaultSyncPeriod = 15 * time.Second

// Controller is the HPA controller.
type Controller struct {
	c      *client.Client
	hpas   *cache.Lister[api.HorizontalPodAutoscaler, *api.HorizontalPodAutoscaler]
	pods   *cache.Lister[api.Pod, *api.Pod]
	queue  *workqueue.Queue
	events events.EventRecorder
	period time.Duration
	now    func() time.Time

	mu sync.Mutex
	// history of each HPA (by key): its recommendations and its changes.
	recommendations map[string][]recommendation
	scaled          map[string][]scaleEvent
}

// New returns the controller; period is its sync period (0: the default).
func New(c *client.Client, f *cache.Factory, rec events.EventRecorder, period time.Duration) *Controller {
	if period <= 0 {
		period = DefaultSyncPeriod
	}
	inf := f.HorizontalPodAutoscalers()
	hc := &Controller{c: c, hpas: inf.Lister(), pods: f.Pods().Lister(), queue: workqueue.New(), events: rec, period: period, now: time.Now,
		recommendations: map[string][]recommendation{}, scaled: map[string][]scaleEvent{}}
	enqueue := func(h *api.HorizontalPodAutoscaler) { hc.queue.Add(cache.Key(h)) }
	inf.AddEventHandler(cache.Handler[*api.HorizontalPodAutoscaler]{OnAdd: enqueue, OnDelete: func(h *api.HorizontalPodAutoscaler) {
		hc.mu.Lock()
		delete(hc.recommendations, cache.Key(h))
		delete(hc.scaled, cache.Key(h))
		hc.mu.Unlock()
	}})
	return hc
}

// Run looks at every HPA each period until ctx ends.
func (hc *Controller) Run(ctx context.Context, workers int) {
	go wait.Every(ctx, hc.period, func() {
		for _, h := range hc.hpas.List(nil) {
			hc.queue.Add(cache.Key(h))
		}
	})
	workqueue.Run(ctx, hc.queue, workers, Name, hc.sync)
}

func (hc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	cached, ok := hc.hpas.Get(ns, name)
	if !ok {
		return nil
	}
	h := cache.DeepCopy(cached)
	now := hc.now().UTC()
	st := api.HorizontalPodAutoscalerStatus{ObservedGeneration: &h.Generation, LastScaleTime: h.Status.LastScaleTime}
	scalePath, err := targetPath(h)
	var sc api.Scale
	if err == nil {
		err = hc.c.Do(ctx, "GET", scalePath, nil, &sc)
	}
	if err != nil {
		st.Conditions = conditions(h.Status.Conditions, now, api.HPAAbleToScale, api.ConditionFalse, "FailedGetScale", err.Error())
		return hc.writeStatus(ctx, h, st)
	}
	current := sc.Spec.Replicas
	st.CurrentReplicas, st.DesiredReplicas = sc.Status.Replicas, current
	st.Conditions = conditions(h.Status.Conditions, now, api.HPAAbleToScale, api.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	if current == 0 {
		st.Conditions = conditions(st.Conditions, now, api.HPAScalingActive, api.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		return hc.writeStatus(ctx, h, st)
	}
	proposed, metrics, reason, merr := hc.propose(ctx, h, sc, current)
	if merr != nil {
		st.CurrentMetrics = metrics
		st.Conditions = conditions(st.Conditions, now, api.HPAScalingActive, api.ConditionFalse, merr.reason, merr.Error())
		events.Eventf(hc.events, h, api.EventTypeWarning, merr.reason, "%v", merr)
		return hc.writeStatus(ctx, h, st)
	}
	st.CurrentMetrics = metrics
	st.Conditions = conditions(st.Conditions, now, api.HPAScalingActive, api.ConditionTrue, "ValidMetricFound", "the HPA was able to compute the replica count from "+reason)
	desired := hc.decide(key, h, current, proposed, now)
	minR := int32(1)
	if h.Spec.MinReplicas != nil {
		minR = *h.Spec.MinReplicas
	}
	switch {
	case desired > h.Spec.MaxReplicas:
		desired = h.Spec.MaxReplicas
		st.Conditions = conditions(st.Conditions, now, api.HPAScalingLimited, api.ConditionTrue, "TooManyReplicas", "the desired replica count is more than the maximum replica count")
	case desired < minR:
		desired = minR
		st.Conditions = conditions(st.Conditions, now, api.HPAScalingLimited, api.ConditionTrue, "TooFewReplicas", "the desired replica count is less than the minimum replica count")
	default:
		st.Conditions = conditions(st.Conditions, now, api.HPAScalingLimited, api.ConditionFalse, "DesiredWithinRange", "the desired count is within the acceptable range")
	}
	st.DesiredReplicas = desired
	if desired != current {
		sc.Spec.Replicas = desired
		if err := hc.c.Do(ctx, "PUT", scalePath, &sc, nil); err != nil {
			st.Conditions = conditions(st.Conditions, now, api.HPAAbleToScale, api.ConditionFalse, "FailedUpdateScale", err.Error())
			hc.writeStatus(ctx, h, st)
			return fmt.Errorf("scaling %s: %w", scalePath, err)
		}
		hc.mu.Lock()
		hc.scaled[key] = append(hc.scaled[key], scaleEvent{at: now, delta: desired - current})
		hc.mu.Unlock()
		st.LastScaleTime = &now
		direction := "above"
		if desired < current {
			direction = "below"
		}
		events.Eventf(hc.events, h, api.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s %s target", desired, reason, direction)
	}
	return hc.writeStatus(ctx, h, st)
}

// scalable are the kinds whose scale subresource an HPA may target.
var scalable = []api.Resource{api.DeploymentsResource, api.ReplicaSetsResource, api.StatefulSetsResource}

// targetPath is the scale subresource of the HPA's target, found by its
// kind and apiVersion's group, as Kubernetes' REST mapper finds it: a
// kind without one is an error (never another kind's object of the name).
func targetPath(h *api.HorizontalPodAutoscaler) (string, error) {
	ref := h.Spec.ScaleTargetRef
	group, _, hasGroup := strings.Cut(ref.APIVersion, "/")
	if !hasGroup {
		group = ""
	}
	for _, res := range scalable {
		if ref.Kind == res.Kind && (ref.APIVersion == "" || group == res.Group) {
			return res.Path(h.Namespace, ref.Name) + "/scale", nil
		}
	}
	return "", fmt.Errorf("no matches for kind %q in group %q with a scale subresource", ref.Kind, group)
}

// decide holds a proposal to the behavior: the stabilization windows over
// the recommendations kept, then the rate limits over the changes made.
func (hc *Controller) decide(key string, h *api.HorizontalPodAutoscaler, current, proposed int32, now time.Time) int32 {
	var up, down api.HPAScalingRules
	if b := h.Spec.Behavior; b != nil {
		up, down = rules(b.ScaleUp, defaultScaleUp), rules(b.ScaleDown, defaultScaleDown)
	} else {
		up, down = rules(nil, defaultScaleUp), rules(nil, defaultScaleDown)
	}
	keep := time.Duration(max(*up.StabilizationWindowSeconds, *down.StabilizationWindowSeconds, 1800)) * time.Second
	hc.mu.Lock()
	defer hc.mu.Unlock()
	history := pruned(hc.recommendations[key], now.Add(-keep))
	stable := stabilize(current, proposed, history, now, up, down)
	hc.recommendations[key] = append(history, recommendation{at: now, replicas: proposed})
	events := hc.scaled[key]
	for len(events) > 0 && now.Sub(events[0].at) > 30*time.Minute {
		events = events[1:]
	}
	hc.scaled[key] = events
	return limit(current, stable, events, now, up, down)
}

func pruned(rs []recommendation, since time.Time) []recommendation {
	out := rs[:0:0]
	for _, r := range rs {
		if r.at.After(since) {
			out = append(out, r)
		}
	}
	return out
}

// conditions sets one condition, its transition time moving only when its
// status does.
func conditions(cs []api.HorizontalPodAutoscalerCondition, now time.Time, typ, status, reason, msg string) []api.HorizontalPodAutoscalerCondition {
	out := append([]api.HorizontalPodAutoscalerCondition(nil), cs...)
	for i := range out {
		if out[i].Type == typ {
			if out[i].Status != status {
				out[i].LastTransitionTime = &now
			}
			out[i].Status, out[i].Reason, out[i].Message = status, reason, msg
			return out
		}
	}
	return append(out, api.HorizontalPodAutoscalerCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: &now})
}

func (hc *Controller) writeStatus(ctx context.Context, h *api.HorizontalPodAutoscaler, st api.HorizontalPodAutoscalerStatus) error {
	if reflect.DeepEqual(st, h.Status) {
		return nil
	}
	h.Status = st
	_, err := hc.c.HorizontalPodAutoscalers(h.Namespace).UpdateStatus(ctx, h)
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		return fmt.Errorf("updating status of hpa %s: %w", cache.Key(h), err)
	}
	return nil
}
