// Package quota counts what objects take of a ResourceQuota, as
// Kubernetes' quota evaluators do: the apiserver admits creates by it and
// the quota controller reports usage by it.
package quota

import (
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/qos"
)

// Usage is what objects take of a quota's resources.
type Usage map[string]resource.Quantity

// Add adds o's amounts.
func (u Usage) Add(o Usage) {
	for k, v := range o {
		q := u[k]
		q.Add(v)
		u[k] = q
	}
}

// Of is what obj, an object of res, takes of the resources q
// names, as Kubernetes' quota evaluators count it: one of its kind (by
// count/<resource>.<group> and, for the core kinds, their short names),
// and for a pod that has not ended, the sums of its containers' requests
// and limits. An object a scoped quota does not select takes nothing.
func Of(q *api.ResourceQuota, res api.Resource, obj api.Object) Usage {
	u := Usage{}
	pod, isPod := obj.(*api.Pod)
	if isPod && (pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed) {
		return u
	}
	if !quotaSelects(q, pod) {
		return u
	}
	one := resource.MustParse("1")
	for name := range q.Spec.Hard {
		if c, ok := validation.QuotaCountOf(name); ok && c.Name == res.Name && c.Group == res.Group {
			u[name] = one
		}
		if c, ok := validation.QuotaObjectCounts[name]; ok && c.Name == res.Name && c.Group == res.Group {
			u[name] = one
		}
	}
	if svc, ok := obj.(*api.Service); ok {
		if _, counted := q.Spec.Hard[validation.QuotaServiceNodePorts]; counted && (svc.Spec.Type == "NodePort" || svc.Spec.Type == "LoadBalancer") {
			u[validation.QuotaServiceNodePorts] = *resource.NewQuantity(int64(len(svc.Spec.Ports)), resource.DecimalSI)
		}
	}
	if isPod {
		for name, amount := range podCompute(pod) {
			if _, counted := q.Spec.Hard[name]; counted {
				u[name] = amount
			}
		}
	}
	return u
}

// podCompute sums a pod's requests and limits under every compute name
// a quota may use (cpu and memory are requests).
func podCompute(pod *api.Pod) Usage {
	req, lim := PodTotals(pod)
	u := Usage{}
	for _, k := range []string{api.ResourceCPU, api.ResourceMemory} {
		if v, ok := req[k]; ok {
			u[k], u["requests."+k] = *Qty(v), *Qty(v)
		}
		if v, ok := lim[k]; ok {
			u["limits."+k] = *Qty(v)
		}
	}
	return u
}

// quotaSelects says whether a quota's scopes select obj: a scoped quota
// counts pods only.
func quotaSelects(q *api.ResourceQuota, pod *api.Pod) bool {
	scopes := map[string]bool{}
	for _, s := range q.Spec.Scopes {
		scopes[s] = true
	}
	negated := map[string]bool{}
	if sel := q.Spec.ScopeSelector; sel != nil {
		for _, e := range sel.MatchExpressions {
			if e.Operator == "DoesNotExist" {
				negated[e.ScopeName] = true
			} else {
				scopes[e.ScopeName] = true
			}
		}
	}
	if len(scopes) == 0 && len(negated) == 0 {
		return true
	}
	if pod == nil {
		return false
	}
	terminating := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	bestEffort := qos.Class(pod) == string(corev1.PodQOSBestEffort)
	has := map[string]bool{api.QuotaScopeTerminating: terminating, api.QuotaScopeNotTerminating: !terminating,
		api.QuotaScopeBestEffort: bestEffort, api.QuotaScopeNotBestEffort: !bestEffort}
	for s := range scopes {
		if !has[s] {
			return false
		}
	}
	for s := range negated {
		if has[s] {
			return false
		}
	}
	return true
}

// Unspecified names what a pod a quota selects must say and does
// not: a quota on requests.cpu needs every container's cpu request, as in
// Kubernetes ("requests.cpu for: web").
func Unspecified(q *api.ResourceQuota, pod *api.Pod) []string {
	if !quotaSelects(q, pod) {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(q.Spec.Hard)) {
		kind, res, ok := strings.Cut(name, ".")
		if !ok {
			kind, res = "requests", name
		}
		if (kind != "requests" && kind != "limits") || (res != api.ResourceCPU && res != api.ResourceMemory) {
			continue
		}
		var missing []string
		for _, cs := range [][]api.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range cs {
				list := c.Resources.Requests
				if kind == "limits" {
					list = c.Resources.Limits
				}
				if _, set := list[res]; !set {
					missing = append(missing, c.Name)
				}
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			out = append(out, name+" for: "+strings.Join(missing, ","))
		}
	}
	return out
}

// PodTotals are a pod's requests and limits as the scheduler counts them:
// its containers' sum, or its largest init container's if larger. A
// resource one container leaves unset is unset for the pod.
func PodTotals(pod *api.Pod) (req, lim api.ResourceList) {
	total := func(get func(api.Container) api.ResourceList) api.ResourceList {
		sum, unset := map[string]resource.Quantity{}, map[string]bool{}
		for _, c := range pod.Spec.Containers {
			for _, k := range []string{api.ResourceCPU, api.ResourceMemory} {
				v, ok := get(c)[k]
				if !ok {
					unset[k] = true
					continue
				}
				q := sum[k]
				q.Add(*Qty(v))
				sum[k] = q
			}
		}
		for _, c := range pod.Spec.InitContainers {
			for k, v := range get(c) {
				if q := Qty(v); q.Cmp(sum[k]) > 0 {
					sum[k] = *q
				}
			}
		}
		out := api.ResourceList{}
		for k, q := range sum {
			if !unset[k] {
				out[k] = q.String()
			}
		}
		return out
	}
	return total(func(c api.Container) api.ResourceList { return c.Resources.Requests }),
		total(func(c api.Container) api.ResourceList { return c.Resources.Limits })
}

// Qty reads a quantity validation has already accepted.
func Qty(s string) *resource.Quantity {
	q, _ := resource.ParseQuantity(s)
	return &q
}

// Kinds are the kinds whose objects make up resource name of a quota.
func Kinds(name string) []api.Resource {
	if res, ok := validation.QuotaCountOf(name); ok {
		return []api.Resource{res}
	}
	if res, ok := validation.QuotaObjectCounts[name]; ok {
		return []api.Resource{res}
	}
	if name == validation.QuotaServiceNodePorts {
		return []api.Resource{api.ServicesResource}
	}
	return []api.Resource{api.PodsResource} // cpu, memory and their requests and limits
}
