package mkctl

import (
	"context"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
)

// FuncRow is a function as the funcs table shows it: with its pool, the
// ReplicaSet function.ObjectName(name) that serves it (nil when there is
// none).
type FuncRow struct {
	*api.Func
	Pool *api.ReplicaSet
}

var _ api.Object = (*FuncRow)(nil)

// funcAndPool takes a row of the funcs table apart; a bare Func has no pool.
func funcAndPool(o api.Object) (*api.Func, *api.ReplicaSet) {
	if r, ok := o.(*FuncRow); ok {
		return r.Func, r.Pool
	}
	return o.(*api.Func), nil
}

// poolColumns are REPLICAS (desired/current) and READY of a function's
// pool; "-" for a v1 function, which has no pool, or when there is none.
func poolColumns(f *api.Func, pool *api.ReplicaSet) (replicas, ready string) {
	if pool == nil || funcVersion(f) == api.FuncAPIVersionV1 {
		return "-", "-"
	}
	desired := int32(0)
	if pool.Spec.Replicas != nil {
		desired = *pool.Spec.Replicas
	}
	return itoa(desired) + "/" + itoa(pool.Status.Replicas), itoa(pool.Status.ReadyReplicas)
}

// withFuncPools pairs listed functions with their ReplicaSets, read in one
// list of namespace ns ("" for all).
func (o *Options) withFuncPools(ctx context.Context, ns string, objs []api.Object) ([]api.Object, error) {
	if len(objs) == 0 {
		return objs, nil
	}
	sets, _, err := o.Client().ReplicaSets(ns).List(ctx, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]*api.ReplicaSet, len(sets))
	for _, rs := range sets {
		byKey[rs.Namespace+"/"+rs.Name] = rs
	}
	rows := make([]api.Object, len(objs))
	for i, obj := range objs {
		f := obj.(*api.Func)
		rows[i] = &FuncRow{Func: f, Pool: byKey[f.Namespace+"/"+function.ObjectName(f.Name)]}
	}
	return rows, nil
}

// withFuncPool pairs one function of a watch event with its ReplicaSet;
// a failed lookup shows as no pool rather than ending the watch.
func (o *Options) withFuncPool(ctx context.Context, obj api.Object) api.Object {
	f, ok := obj.(*api.Func)
	if !ok {
		return obj
	}
	row := &FuncRow{Func: f}
	if funcVersion(f) == api.FuncAPIVersionV1 {
		return row
	}
	if rs, err := o.Client().ReplicaSets(f.Namespace).Get(ctx, function.ObjectName(f.Name)); err == nil {
		row.Pool = rs
	}
	return row
}
