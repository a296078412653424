package validation

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
)

// Quotas and limit ranges are judged by Kubernetes' rules (the upstream
// package); these are minik8s's on top: a quota or range naming something
// minik8s does not count or bound is refused, since storing it would
// promise a cap that does not hold.

// QuotaComputeResources are the pod resources a quota caps: cpu and
// memory mean their requests, as in Kubernetes.
var QuotaComputeResources = []string{"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}

// QuotaObjectCounts are the object counts a quota caps by their short
// names; count/<resource>[.<group>] counts any served kind.
var QuotaObjectCounts = map[string]api.Resource{
	"pods": api.PodsResource, "services": api.ServicesResource, "configmaps": api.ConfigMapsResource,
	"secrets": api.SecretsResource, "resourcequotas": api.ResourceQuotasResource,
}

// QuotaServiceNodePorts caps a namespace's NodePort Services.
const QuotaServiceNodePorts = "services.nodeports"

// QuotaCountOf is the resource a count/<resource>[.<group>] name counts.
func QuotaCountOf(name string) (api.Resource, bool) {
	rest, ok := strings.CutPrefix(name, "count/")
	if !ok {
		return api.Resource{}, false
	}
	plural, group, _ := strings.Cut(rest, ".")
	for _, res := range api.Resources {
		if res.Name == plural && res.Namespaced && res.Served().Group == group {
			return res, true
		}
	}
	return api.Resource{}, false
}

// QuotaCounts says whether a quota may name resource.
func QuotaCounts(name string) bool {
	if _, ok := QuotaObjectCounts[name]; ok || name == QuotaServiceNodePorts {
		return true
	}
	for _, r := range QuotaComputeResources {
		if name == r {
			return true
		}
	}
	_, ok := QuotaCountOf(name)
	return ok
}

var quotaScopes = []string{api.QuotaScopeTerminating, api.QuotaScopeNotTerminating, api.QuotaScopeBestEffort, api.QuotaScopeNotBestEffort}

func resourceQuota(q *api.ResourceQuota) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for name := range q.Spec.Hard {
		if !QuotaCounts(name) {
			errs = append(errs, field.NotSupported(spec.Child("hard").Key(name), name,
				append(append(QuotaComputeResources, "pods", "services", QuotaServiceNodePorts, "configmaps", "secrets", "resourcequotas"),
					"count/<resource>[.<group>] of a kind minik8s serves")))
		}
	}
	for i, s := range q.Spec.Scopes {
		if !slices.Contains(quotaScopes, s) {
			errs = append(errs, field.NotSupported(spec.Child("scopes").Index(i), s, quotaScopes))
		}
	}
	if sel := q.Spec.ScopeSelector; sel != nil {
		for i, e := range sel.MatchExpressions {
			p := spec.Child("scopeSelector", "matchExpressions").Index(i)
			if !slices.Contains(quotaScopes, e.ScopeName) {
				errs = append(errs, field.NotSupported(p.Child("scopeName"), e.ScopeName, quotaScopes))
			}
		}
	}
	return errs
}

// limitRangeResources are what a LimitRange bounds.
var limitRangeResources = []string{api.ResourceCPU, api.ResourceMemory}

func limitRange(lr *api.LimitRange) field.ErrorList {
	var errs field.ErrorList
	for i, item := range lr.Spec.Limits {
		p := field.NewPath("spec", "limits").Index(i)
		if item.Type != api.LimitTypeContainer && item.Type != api.LimitTypePod {
			errs = append(errs, field.NotSupported(p.Child("type"), item.Type, []string{api.LimitTypeContainer, api.LimitTypePod}))
		}
		for _, l := range []struct {
			name string
			list api.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			for name := range l.list {
				if !slices.Contains(limitRangeResources, name) {
					errs = append(errs, field.NotSupported(p.Child(l.name).Key(name), name, limitRangeResources))
				}
			}
		}
	}
	return errs
}

// defaultLimitRange fills a Container item's defaults as Kubernetes'
// SetDefaults_LimitRangeItem: the default limit is the max, the default
// request the default limit, or else the min.
func defaultLimitRange(lr *api.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != api.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = api.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = api.ResourceList{}
		}
		for k, v := range item.Max {
			if _, ok := item.Default[k]; !ok {
				item.Default[k] = v
			}
		}
		for k, v := range item.Default {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v
			}
		}
		for k, v := range item.Min {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v
			}
		}
	}
}
