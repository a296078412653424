package registry

import (
	"context"

	"minik8s/pkg/api"
)

// FieldTracker records in obj's metadata.managedFields that manager wrote
// it over old (nil on create), through subresource sub ("" or "status").
// It never fails a write.
type FieldTracker interface {
	Update(res api.Resource, sub string, old, obj api.Object, manager string)
}

type managerKey struct{}

// WithManager says who writes in ctx (a request's fieldManager, or its
// user agent's name): the registry records the fields it sets. A write
// without one (the apiserver's own, or a server-side apply, whose fields
// the apply recorded) leaves managedFields as the object carries them.
func WithManager(ctx context.Context, manager string) context.Context {
	return context.WithValue(ctx, managerKey{}, manager)
}

// track records ctx's manager's write of obj over old.
func (r *Store) track(ctx context.Context, sub string, old, obj api.Object) {
	manager, _ := ctx.Value(managerKey{}).(string)
	if r.Fields == nil || manager == "" {
		return
	}
	r.Fields.Update(r.Resource, sub, old, obj, manager)
}
