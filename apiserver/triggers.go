package apiserver

import (
	"context"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// admitTrigger checks what a trigger's validation cannot see alone: its
// function exists, and its gateway path (one gateway serves every
// namespace) is no other trigger's. Both are 422 naming the field.
func (s *Server) admitTrigger(ctx context.Context, ns string, t *api.Trigger) error {
	if _, err := s.registries[api.FuncsResource.Name].get(ctx, ns, t.Spec.Function); err != nil {
		if errdefs.IsNotFound(err) {
			return errdefs.Invalid("spec.function", "function %q does not exist in namespace %q", t.Spec.Function, ns)
		}
		return err
	}
	if t.Spec.HTTP == nil {
		return nil
	}
	objs, _, err := s.registries[api.TriggersResource.Name].list(ctx, "", filter{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		other := o.(*api.Trigger)
		if other.Spec.HTTP == nil || (other.Namespace == ns && other.Name == t.Name) {
			continue
		}
		if other.Spec.HTTP.Path == t.Spec.HTTP.Path {
			return errdefs.Invalid("spec.http.path", "%q is already taken by trigger %s/%s", t.Spec.HTTP.Path, other.Namespace, other.Name)
		}
	}
	return nil
}
