package apiserver

import (
	"context"
	"time"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
)

// defaultClass is the admission of Kubernetes' DefaultStorageClass and
// DefaultIngressClass plugins: an object created naming no class (*class
// nil) and no legacy class annotation (legacy its value) gets the name of
// the default class of res, the one annotated with annotation "true".
func (s *Server) defaultClass(ctx context.Context, class **string, legacy string, res api.Resource, annotation string) error {
	if *class != nil || legacy != "" {
		return nil
	}
	classes, _, err := s.registries[res.Name].List(ctx, "", registry.Filter{})
	if err != nil {
		return err
	}
	if name := newestDefault(classes, annotation); name != "" {
		*class = &name
	}
	return nil
}

// newestDefault is the name of the newest class annotated as the default,
// as Kubernetes' plugins pick when there are several (of equal age, the
// first by name); "" when none is.
func newestDefault(classes []api.Object, annotation string) string {
	var best *api.ObjectMeta
	for _, o := range classes {
		c := o.GetObjectMeta()
		if c.Annotations[annotation] != "true" {
			continue
		}
		if best == nil || newer(c.CreationTimestamp, best.CreationTimestamp) ||
			(!newer(best.CreationTimestamp, c.CreationTimestamp) && c.Name < best.Name) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

func newer(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a != nil
	}
	return a.After(*b)
}
