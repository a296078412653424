package apiserver

import (
	"net/http"
	"sort"

	"github.com/gin-gonic/gin"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// listFuncs serves GET /api/funcs: every function of the namespace (of
// every namespace with ?allNamespaces=true) with
// its version, runtime, triggers, counter, ready pods and last call, so
// that everything invocable is seen at once (seed 003).
func (h *funcHandlers) listFuncs(c *gin.Context) {
	ctx, ns := c.Request.Context(), funcNamespace(c)
	funcs, _, err := h.srv.registries[api.FuncsResource.Name].List(ctx, ns, registry.Filter{})
	if err != nil {
		fail(c, err)
		return
	}
	triggers, _, err := h.srv.registries[api.TriggersResource.Name].List(ctx, ns, registry.Filter{})
	if err != nil {
		fail(c, err)
		return
	}
	byFunc := map[string][]api.TriggerSummary{}
	for _, o := range triggers {
		t := o.(*api.Trigger)
		kind, source := function.TriggerSource(t)
		byFunc[t.Spec.Function] = append(byFunc[t.Spec.Function], api.TriggerSummary{Name: t.Name, Type: kind, Source: source, Ready: t.Status.Ready})
	}
	eps := h.srv.registries[api.EndpointsResource.Name]
	out := api.FuncSummaryList{Items: []api.FuncSummary{}}
	for _, o := range funcs {
		f := o.(*api.Func)
		s := api.FuncSummary{Name: f.Name, Namespace: f.Namespace, Version: f.APIVersion, Runtime: function.Runtime(&f.Spec),
			Triggers: byFunc[f.Name], Counter: f.Status.Counter, LastCall: f.Status.TimeStamp}
		if s.Version == "" {
			s.Version = api.FuncAPIVersionV2
		}
		if s.Triggers == nil {
			s.Triggers = []api.TriggerSummary{}
		}
		sort.Slice(s.Triggers, func(i, j int) bool { return s.Triggers[i].Name < s.Triggers[j].Name })
		if ep, err := eps.Get(ctx, f.Namespace, function.ObjectName(f.Name)); err == nil {
			for _, sub := range ep.(*api.Endpoints).Subsets {
				s.ReadyPods += len(sub.Addresses)
			}
		}
		out.Items = append(out.Items, s)
	}
	sort.Slice(out.Items, func(i, j int) bool {
		a, b := out.Items[i], out.Items[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	c.JSON(http.StatusOK, out)
}
