package apiserver

import (
	"context"
	"fmt"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// admitFuncTraffic checks that the revisions a function's traffic names
// exist: 422 naming the target, rather than calls failing later.
func (s *Server) admitFuncTraffic(ctx context.Context, ns string, f *api.Func) error {
	name := f.Name
	if name == "" {
		name = f.Spec.Name
	}
	for i, t := range f.Spec.Traffic {
		if t.Revision == 0 {
			continue
		}
		obj, err := s.registries[api.FuncRevisionsResource.Name].Get(ctx, ns, function.RevisionName(name, t.Revision))
		if errdefs.IsNotFound(err) || (err == nil && obj.(*api.FuncRevision).Spec.Function != name) {
			return errdefs.Invalid(fmt.Sprintf("spec.traffic[%d].revision", i), "function %q has no revision %d (mkctl func revisions %s lists them)", name, t.Revision, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
