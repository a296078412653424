package podautoscaler

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/labels"
	"minik8s/pkg/quantity"
)

// metricError is a metric that could not be read, with the reason
// Kubernetes gives it in the ScalingActive condition and the event
// (FailedGetResourceMetric, FailedGetPodsMetric...).
type metricError struct {
	reason string
	err    error
}

func (e *metricError) Error() string { return e.err.Error() }

// sample is what the pods of a target use: read once per sync, for the
// metrics that need it.
type sample struct {
	pods []*api.Pod
	used map[string]api.PodMetrics
	err  error // reading them failed: every metric that needs them fails
}

// propose asks each metric for a replica count and takes the most, with
// what was measured and the metric that asked for it. As in Kubernetes,
// with every metric unreadable, or some unreadable while the others ask
// for fewer pods, it proposes nothing (the first unreadable one says why).
func (hc *Controller) propose(ctx context.Context, h *api.HorizontalPodAutoscaler, sc api.Scale, current int32) (int32, []api.MetricStatus, string, *metricError) {
	tol := tolerances(h.Spec.Behavior)
	var read *sample
	best, reason := int32(0), ""
	var statuses []api.MetricStatus
	var invalid []string
	var first *metricError
	for i, m := range h.Spec.Metrics {
		want, status, why, merr := hc.measure(ctx, h, sc, m, &read, current, tol)
		if merr != nil {
			invalid = append(invalid, fmt.Sprintf("metrics[%d]: %v", i, merr))
			if first == nil {
				first = merr
			}
			continue
		}
		statuses = append(statuses, status)
		if want > best || reason == "" {
			best, reason = want, why
		}
	}
	if first != nil && (len(statuses) == 0 || best < current) {
		return 0, statuses, "", &metricError{reason: first.reason, err: fmt.Errorf("%s", strings.Join(invalid, "; "))}
	}
	if len(statuses) == 0 {
		// Defaulting gives every HPA a metric; none is no reason to scale.
		return 0, nil, "", &metricError{reason: "InvalidMetricSourceType", err: fmt.Errorf("the HPA has no metric")}
	}
	return best, statuses, reason, nil
}

// measure is one metric's replica count.
func (hc *Controller) measure(ctx context.Context, h *api.HorizontalPodAutoscaler, sc api.Scale, m api.MetricSpec, read **sample, current int32, tol tolerance) (int32, api.MetricStatus, string, *metricError) {
	var name, container, reason string
	var target api.MetricTarget
	switch {
	case m.Type == api.MetricSourceResource && m.Resource != nil:
		name, target, reason = m.Resource.Name, m.Resource.Target, "FailedGetResourceMetric"
	case m.Type == api.MetricSourceContainerResource && m.ContainerResource != nil:
		name, container, target, reason = m.ContainerResource.Name, m.ContainerResource.Container, m.ContainerResource.Target, "FailedGetContainerResourceMetric"
	case m.Type == api.MetricSourcePods && m.Pods != nil:
		return 0, api.MetricStatus{}, "", noAdapter("FailedGetPodsMetric", m.Pods.Metric.Name, "custom.metrics.k8s.io")
	case m.Type == api.MetricSourceObject && m.Object != nil:
		return 0, api.MetricStatus{}, "", noAdapter("FailedGetObjectMetric", m.Object.Metric.Name, "custom.metrics.k8s.io")
	case m.Type == api.MetricSourceExternal && m.External != nil:
		return 0, api.MetricStatus{}, "", noAdapter("FailedGetExternalMetric", m.External.Metric.Name, "external.metrics.k8s.io")
	default:
		return 0, api.MetricStatus{}, "", &metricError{"InvalidMetricSourceType", fmt.Errorf("unknown metric source type %q", m.Type)}
	}
	if *read == nil {
		s, err := hc.readPods(ctx, h.Namespace, sc.Status.Selector)
		*read = &sample{err: err}
		if err == nil {
			*read = s
		}
	}
	if err := (*read).err; err != nil {
		return 0, api.MetricStatus{}, "", &metricError{reason, err}
	}
	samples := make([]podSample, 0, len((*read).pods))
	for _, p := range (*read).pods {
		s := podSample{request: requestOf(p, name, container)}
		if pm, ok := (*read).used[p.Name]; ok {
			s.usage, s.hasUsage = usageOf(pm, name, container)
		}
		samples = append(samples, s)
	}
	what := name
	if container != "" {
		what = name + " of container " + container
	}
	var want int32
	var value api.MetricValueStatus
	why := what + " resource utilization (percentage of request)"
	if target.Type == api.MetricUtilization && target.AverageUtilization != nil {
		n, util, err := replicasForUtilization(current, samples, *target.AverageUtilization, tol)
		if err != nil {
			return 0, api.MetricStatus{}, "", &metricError{reason, fmt.Errorf("%s: %w", what, err)}
		}
		want, value.AverageUtilization = n, &util
	} else {
		n, avg, err := replicasForAverage(current, samples, name, target.AverageValue, tol)
		if err != nil {
			return 0, api.MetricStatus{}, "", &metricError{reason, fmt.Errorf("%s: %w", what, err)}
		}
		want, value.AverageValue, why = n, avg, what+" resource"
	}
	status := api.MetricStatus{Type: m.Type}
	if container == "" {
		status.Resource = &api.ResourceMetricStatus{Name: name, Current: value}
	} else {
		status.ContainerResource = &api.ContainerResourceMetricStatus{Name: name, Container: container, Current: value}
	}
	return want, status, why, nil
}

// noAdapter: minik8s serves the resource metrics API only.
func noAdapter(reason, metric, group string) *metricError {
	return &metricError{reason, fmt.Errorf("unable to get metric %s: no %s API is served (minik8s has the resource metrics API only)", metric, group)}
}

// readPods reads the target's live pods and what they use.
func (hc *Controller) readPods(ctx context.Context, ns, selector string) (*sample, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("the target's selector %q: %w", selector, err)
	}
	s := &sample{used: map[string]api.PodMetrics{}}
	for _, p := range hc.pods.ListNamespace(ns, sel) {
		if p.DeletionTimestamp == nil && p.Status.Phase != api.PodFailed && p.Status.Phase != api.PodSucceeded {
			s.pods = append(s.pods, p)
		}
	}
	var list api.PodMetricsList
	path := "/apis/" + api.MetricsGroupVersion + "/namespaces/" + url.PathEscape(ns) + "/pods?labelSelector=" + url.QueryEscape(selector)
	if err := hc.c.Do(ctx, "GET", path, nil, &list); err != nil {
		return nil, fmt.Errorf("reading the pods' metrics: %w", err)
	}
	for _, pm := range list.Items {
		s.used[pm.Name] = pm
	}
	return s, nil
}

// replicasForAverage is desired = ceil(total usage / target per pod).
func replicasForAverage(current int32, pods []podSample, res, target string, tol tolerance) (int32, string, error) {
	per, err := amount(res, target)
	if err != nil || per <= 0 {
		return 0, "", fmt.Errorf("target %q: %v", target, err)
	}
	var total int64
	n := 0
	for _, p := range pods {
		if p.hasUsage {
			total += p.usage
			n++
		}
	}
	if n == 0 {
		return 0, "", errNoMetrics
	}
	avg := total / int64(n)
	ratio := float64(avg) / float64(per)
	shown := quantity.FormatBytes(avg)
	if res == api.ResourceCPU {
		shown = quantity.FormatMilliCPU(avg)
	}
	if tol.within(ratio) {
		return current, shown, nil
	}
	return int32(math.Ceil(float64(total) / float64(per))), shown, nil
}

// amount is a quantity of res in the unit samples use: millicores for
// cpu, bytes for memory.
func amount(res, q string) (int64, error) {
	if res == api.ResourceCPU {
		return quantity.MilliCPU(q)
	}
	return quantity.Bytes(q)
}

// requestOf is what the pod's containers (or the one named) request of
// res; 0 when one of them requests none (no utilization).
func requestOf(p *api.Pod, res, container string) int64 {
	var total int64
	found := false
	for _, c := range p.Spec.Containers {
		if container != "" && c.Name != container {
			continue
		}
		found = true
		q, ok := c.Resources.Requests[res]
		if !ok {
			return 0
		}
		n, err := amount(res, q)
		if err != nil {
			return 0
		}
		total += n
	}
	if !found {
		return 0
	}
	return total
}

// usageOf is what the pod's containers (or the one named) use of res;
// false when the named one has no reading.
func usageOf(pm api.PodMetrics, res, container string) (int64, bool) {
	var total int64
	found := container == ""
	for _, c := range pm.Containers {
		if container != "" && c.Name != container {
			continue
		}
		found = true
		n, _ := amount(res, c.Usage[res])
		total += n
	}
	return total, found
}
