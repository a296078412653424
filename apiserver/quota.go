package apiserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"

	"minik8s/apiserver/admission"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/qos"
	"minik8s/pkg/quota"
)

// Quotas and limit ranges are admission, as in Kubernetes: the server
// follows both kinds in memory (a create in a namespace without either
// costs a map read), gives a new pod its LimitRanges' defaults before it
// is validated, and admits every new object against its namespace's
// ResourceQuotas. What a namespace uses is counted from the store at the
// create, under a lock per namespace held until the object is written, so
// that creates racing for the last of a quota cannot both have it (one
// apiserver serves the cluster). The quota controller only reports usage.

type quotaAdmission struct {
	regs   map[string]*registry.Store
	quotas *registry.Mirror
	ranges *registry.Mirror

	mu    sync.Mutex
	locks map[string]*sync.Mutex // by namespace
}

func newQuotaAdmission(regs map[string]*registry.Store) *quotaAdmission {
	return &quotaAdmission{regs: regs, locks: map[string]*sync.Mutex{},
		quotas: registry.NewMirror(regs[api.ResourceQuotasResource.Name], func() {}),
		ranges: registry.NewMirror(regs[api.LimitRangesResource.Name], func() {})}
}

// Run follows quotas and limit ranges until ctx ends.
func (q *quotaAdmission) Run(ctx context.Context) {
	go q.ranges.Run(ctx)
	q.quotas.Run(ctx)
}

func inNamespace[T api.Object](m *registry.Mirror, ns string) []T {
	var out []T
	for _, o := range m.Objects() {
		if o.GetObjectMeta().Namespace == ns {
			out = append(out, o.(T))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetObjectMeta().Name < out[j].GetObjectMeta().Name })
	return out
}

// limitPod gives a new pod its namespace's LimitRanges' defaults and
// refuses it past their bounds (403, as Kubernetes' LimitRanger).
func (q *quotaAdmission) limitPod(_ context.Context, obj api.Object) error {
	pod, ok := obj.(*api.Pod)
	if !ok {
		return nil
	}
	ranges := inNamespace[*api.LimitRange](q.ranges, pod.Namespace)
	if len(ranges) == 0 {
		return nil
	}
	errs := admission.LimitPod(pod, ranges)
	pod.Status.QOSClass = qos.Class(pod) // the defaults may change it
	if len(errs) > 0 {
		return fmt.Errorf("pods %q is forbidden: [%s]: %w", pod.Name, strings.Join(errs, ", "), errdefs.ErrForbidden)
	}
	return nil
}

func (q *quotaAdmission) lock(ns string) *sync.Mutex {
	q.mu.Lock()
	defer q.mu.Unlock()
	l, ok := q.locks[ns]
	if !ok {
		l = &sync.Mutex{}
		q.locks[ns] = l
	}
	return l
}

// reserve admits new objects of res against their namespaces' quotas;
// release unlocks once they are written (or not).
func (q *quotaAdmission) reserve(ctx context.Context, res api.Resource, objs ...api.Object) (release func(), err error) {
	if !res.Namespaced || len(objs) == 0 {
		return func() {}, nil
	}
	byNS := map[string][]api.Object{}
	for _, o := range objs {
		ns := o.GetObjectMeta().Namespace
		byNS[ns] = append(byNS[ns], o)
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		if len(inNamespace[*api.ResourceQuota](q.quotas, ns)) > 0 {
			namespaces = append(namespaces, ns)
		}
	}
	sort.Strings(namespaces) // one order: no two batches deadlock
	var held []*sync.Mutex
	release = func() {
		for _, l := range held {
			l.Unlock()
		}
	}
	for _, ns := range namespaces {
		l := q.lock(ns)
		l.Lock()
		held = append(held, l)
		if err := q.admit(ctx, res, ns, byNS[ns]); err != nil {
			release()
			return nil, err
		}
	}
	return release, nil
}

// admit judges objs, new in ns, against each quota of ns.
func (q *quotaAdmission) admit(ctx context.Context, res api.Resource, ns string, objs []api.Object) error {
	for _, rq := range inNamespace[*api.ResourceQuota](q.quotas, ns) {
		delta := quota.Usage{}
		for _, o := range objs {
			if pod, ok := o.(*api.Pod); ok {
				if missing := quota.Unspecified(rq, pod); len(missing) > 0 {
					return fmt.Errorf("pods %q is forbidden: failed quota: %s: must specify %s: %w", pod.Name, rq.Name,
						strings.Join(missing, "; "), errdefs.ErrForbidden)
				}
			}
			delta.Add(quota.Of(rq, res, o))
		}
		if len(delta) == 0 {
			continue
		}
		used, err := q.used(ctx, ns, rq, delta)
		if err != nil {
			return err
		}
		var requested, usedS, limited []string
		for _, name := range slices.Sorted(maps.Keys(delta)) {
			total := used[name]
			total.Add(delta[name])
			hard := qtyOf(rq.Spec.Hard[name])
			if total.Cmp(hard) > 0 {
				d, u := delta[name], used[name]
				requested = append(requested, name+"="+d.String())
				usedS = append(usedS, name+"="+u.String())
				limited = append(limited, name+"="+rq.Spec.Hard[name])
			}
		}
		if len(requested) > 0 {
			name := objs[0].GetObjectMeta().Name
			return fmt.Errorf("%s %q is forbidden: exceeded quota: %s, requested: %s, used: %s, limited: %s: %w", res.Name, name, rq.Name,
				strings.Join(requested, ","), strings.Join(usedS, ","), strings.Join(limited, ","), errdefs.ErrForbidden)
		}
	}
	return nil
}

// used counts, from the store, what ns's objects take of the resources
// delta names.
func (q *quotaAdmission) used(ctx context.Context, ns string, rq *api.ResourceQuota, delta quota.Usage) (quota.Usage, error) {
	kinds := map[string]api.Resource{}
	for name := range delta {
		for _, res := range quota.Kinds(name) {
			kinds[res.Name+"."+res.Group] = res
		}
	}
	used := quota.Usage{}
	for _, res := range kinds {
		objs, _, err := q.regs[res.Name].List(ctx, ns, registry.Filter{})
		if err != nil {
			return nil, fmt.Errorf("counting %s for quota %s: %w", res.Name, rq.Name, err)
		}
		for _, o := range objs {
			used.Add(quota.Of(rq, res, o))
		}
	}
	return used, nil
}

// qtyOf reads a quantity validation has already accepted.
func qtyOf(s string) resource.Quantity {
	q, _ := resource.ParseQuantity(s)
	return q
}
