package admission

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/quota"
)

// AnnotationLimitRanger says which defaults a LimitRange gave a pod, as
// Kubernetes' LimitRanger writes it.
const AnnotationLimitRanger = "kubernetes.io/limit-ranger"

// LimitPod applies a namespace's LimitRanges to a new pod, as Kubernetes'
// LimitRanger does: containers are given the ranges' default requests and
// limits for what they leave unset, then every container (Container
// items) and the pod as a whole (Pod items) must fall within min, max and
// maxLimitRequestRatio. The violations come back in one error, in
// Kubernetes' words; the caller answers 403.
func LimitPod(pod *api.Pod, ranges []*api.LimitRange) []string {
	var set []string
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type != api.LimitTypeContainer {
				continue
			}
			for _, cs := range [][]api.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for i := range cs {
					if what := defaultContainer(&cs[i], item); what != "" {
						set = append(set, what)
					}
				}
			}
		}
	}
	if len(set) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[AnnotationLimitRanger] = "LimitRanger plugin set: " + strings.Join(set, "; ")
	}
	var errs []string
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case api.LimitTypeContainer:
				for _, cs := range [][]api.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
					for _, c := range cs {
						errs = append(errs, bounds(item, "Container", c.Resources.Requests, c.Resources.Limits)...)
					}
				}
			case api.LimitTypePod:
				req, lim := quota.PodTotals(pod)
				errs = append(errs, bounds(item, "Pod", req, lim)...)
			}
		}
	}
	return errs
}

// defaultContainer gives c item's defaults for what it leaves unset and
// says what it set ("cpu, memory request for container c").
func defaultContainer(c *api.Container, item api.LimitRangeItem) string {
	requests := fillUnset(&c.Resources.Requests, item.DefaultRequest)
	limits := fillUnset(&c.Resources.Limits, item.Default)
	var out []string
	if len(requests) > 0 {
		out = append(out, strings.Join(requests, ", ")+" request for container "+c.Name)
	}
	if len(limits) > 0 {
		out = append(out, strings.Join(limits, ", ")+" limit for container "+c.Name)
	}
	return strings.Join(out, "; ")
}

// fillUnset sets in list what defaults has and list does not, and says
// which.
func fillUnset(list *api.ResourceList, defaults api.ResourceList) []string {
	var set []string
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		if _, ok := (*list)[k]; ok {
			continue
		}
		if *list == nil {
			*list = api.ResourceList{}
		}
		(*list)[k] = defaults[k]
		set = append(set, k)
	}
	return set
}

// bounds judges what one container (or the pod, kind "Pod") asks for
// against item.
func bounds(item api.LimitRangeItem, kind string, req, lim api.ResourceList) []string {
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(item.Min)) {
		min := quota.Qty(item.Min[k])
		r, hasReq := req[k]
		l, hasLim := lim[k]
		switch {
		case !hasReq:
			errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", k, kind, item.Min[k]))
		case quota.Qty(r).Cmp(*min) < 0:
			errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", k, kind, item.Min[k], r))
		}
		if hasLim && quota.Qty(l).Cmp(*min) < 0 {
			errs = append(errs, fmt.Sprintf("minimum %s usage per %s is %s, but limit is %s", k, kind, item.Min[k], l))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(item.Max)) {
		max := quota.Qty(item.Max[k])
		r, hasReq := req[k]
		l, hasLim := lim[k]
		switch {
		case !hasLim:
			errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s.  No limit is specified", k, kind, item.Max[k]))
		case quota.Qty(l).Cmp(*max) > 0:
			errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", k, kind, item.Max[k], l))
		}
		if hasReq && quota.Qty(r).Cmp(*max) > 0 {
			errs = append(errs, fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", k, kind, item.Max[k], r))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(item.MaxLimitRequestRatio)) {
		r, hasReq := req[k]
		l, hasLim := lim[k]
		if !hasReq || !hasLim || quota.Qty(r).IsZero() {
			errs = append(errs, fmt.Sprintf("%s max limit to request ratio per %s is %s, but no request or limit is specified", k, kind, item.MaxLimitRequestRatio[k]))
			continue
		}
		ratio := float64(quota.Qty(l).MilliValue()) / float64(quota.Qty(r).MilliValue())
		if max := quota.Qty(item.MaxLimitRequestRatio[k]).AsApproximateFloat64(); ratio > max {
			errs = append(errs, fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", k, kind, item.MaxLimitRequestRatio[k], ratio))
		}
	}
	return errs
}
