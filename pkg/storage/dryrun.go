package storage

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// DryRun is a store whose writes are checked as the store underneath would
// check them (a create needs an absent key, an update or delete an existing
// one, a precondition its version) and answered as if done, without being
// done: Kubernetes' ?dryRun=All. Reads and watches go through.
type DryRun struct {
	Interface
}

var _ Interface = DryRun{}

func (d DryRun) Create(ctx context.Context, key string, obj api.Object, _ time.Duration) error {
	return d.absent(ctx, key, obj)
}

func (d DryRun) CreateMany(ctx context.Context, items []Item, _ time.Duration) error {
	for _, it := range items {
		if err := d.absent(ctx, it.Key, it.Object); err != nil {
			return err
		}
	}
	return nil
}

func (d DryRun) Update(ctx context.Context, key string, obj api.Object) error {
	return d.Get(ctx, key, empty(obj))
}

func (d DryRun) GuaranteedUpdate(ctx context.Context, key string, newObj NewFunc, fn UpdateFunc) (api.Object, error) {
	cur := newObj()
	if err := d.Get(ctx, key, cur); err != nil {
		return nil, err
	}
	return fn(cur)
}

func (d DryRun) Delete(ctx context.Context, key string, out api.Object, preconditionRV string) error {
	if err := d.Get(ctx, key, out); err != nil {
		return err
	}
	if rv := out.GetObjectMeta().ResourceVersion; preconditionRV != "" && preconditionRV != rv {
		return fmt.Errorf("%s: resourceVersion %s is stale (now %s): %w", key, preconditionRV, rv, errdefs.ErrConflict)
	}
	return nil
}

func (d DryRun) absent(ctx context.Context, key string, obj api.Object) error {
	err := d.Get(ctx, key, empty(obj))
	switch {
	case err == nil:
		return fmt.Errorf("%s: %w", key, errdefs.ErrAlreadyExists)
	case errdefs.IsNotFound(err):
		return nil
	}
	return err
}

// empty is a new object of obj's type, to read into.
func empty(obj api.Object) api.Object {
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(api.Object)
}
