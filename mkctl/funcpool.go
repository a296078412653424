package mkctl

import (
	"context"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/printers"
)

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
		rows[i] = printers.PoolRow(obj.(*api.Func), func(ns, name string) *api.ReplicaSet { return byKey[ns+"/"+name] })
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
	return printers.PoolRow(f, func(ns, name string) *api.ReplicaSet {
		rs, err := o.Client().ReplicaSets(ns).Get(ctx, name)
		if err != nil {
			return nil
		}
		return rs
	})
}
