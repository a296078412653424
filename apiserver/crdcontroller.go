package apiserver

import (
	"context"
	"errors"
	"slices"
	"time"

	log "github.com/sirupsen/logrus"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// runCRDs serves the kinds of the CustomResourceDefinitions in the store
// as they come and go, as Kubernetes' apiextensions controllers do: names
// accepted (or refused, taken by another definition), the kind
// established and served, and a deleted definition's objects removed
// before its finalizer and its routes go. Level-triggered: every event
// syncs the definition it names from what the store holds.
func (s *Server) runCRDs(ctx context.Context) {
	reg := s.registries[api.CustomResourceDefinitionsResource.Name]
	for ctx.Err() == nil {
		objs, rev, err := reg.List(ctx, "", registry.Filter{})
		if err == nil {
			for _, o := range objs {
				s.syncCRD(ctx, o.GetObjectMeta().Name)
			}
			s.forgetCRDs(objs)
			s.refreshCustomOpenAPI()
			var events <-chan crdEvent
			events, err = s.watchCRDs(ctx, reg, rev)
			for err == nil {
				ev, ok := <-events
				if !ok {
					break
				}
				s.syncCRD(ctx, ev.name)
				s.refreshCustomOpenAPI()
			}
		}
		if err != nil && ctx.Err() == nil {
			log.WithError(err).Warn("apiserver: watching CustomResourceDefinitions")
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

type crdEvent struct{ name string }

// watchCRDs streams the names of the definitions that change after rev.
func (s *Server) watchCRDs(ctx context.Context, reg *registry.Store, rev int64) (<-chan crdEvent, error) {
	ch, err := reg.Watch(ctx, "", rev)
	if err != nil {
		return nil, err
	}
	out := make(chan crdEvent)
	go func() {
		defer close(out)
		for ev := range ch {
			if ev.Err != nil || ev.Object == nil {
				return
			}
			select {
			case out <- crdEvent{name: ev.Object.GetObjectMeta().Name}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// refreshCustomOpenAPI rebuilds the OpenAPI documents when the kinds
// served changed: here, once per change, never per request.
func (s *Server) refreshCustomOpenAPI() {
	if err := s.openapi.setCustom(s.customs.served()); err != nil {
		log.WithError(err).Warn("apiserver: OpenAPI of the custom resources")
	}
}

// forgetCRDs stops serving the definitions no longer in the store.
func (s *Server) forgetCRDs(present []api.Object) {
	s.customs.mu.RLock()
	var gone []*api.CustomResourceDefinition
	for name, crd := range s.customs.crds {
		if !slices.ContainsFunc(present, func(o api.Object) bool { return o.GetObjectMeta().Name == name }) {
			gone = append(gone, crd)
		}
	}
	s.customs.mu.RUnlock()
	for _, crd := range gone {
		s.customs.serve(crd, nil)
	}
}

// syncCRD brings the serving of one definition to what the store says.
func (s *Server) syncCRD(ctx context.Context, name string) {
	reg := s.registries[api.CustomResourceDefinitionsResource.Name]
	obj, err := reg.Get(ctx, "", name)
	if errdefs.IsNotFound(err) {
		s.customs.serve(&api.CustomResourceDefinition{ObjectMeta: api.ObjectMeta{Name: name}}, nil)
		return
	}
	if err != nil {
		log.WithError(err).WithField("crd", name).Warn("apiserver: reading a CustomResourceDefinition")
		return
	}
	crd := obj.(*api.CustomResourceDefinition)
	if crd.DeletionTimestamp != nil {
		s.finalizeCRD(ctx, crd)
		return
	}
	accepted := !s.customs.taken(crd)
	if accepted {
		crd.Status.AcceptedNames = crd.Spec.Names
	}
	versions, err := s.customVersions(crd)
	if err != nil {
		log.WithError(err).WithField("crd", name).Warn("apiserver: a CustomResourceDefinition is not served")
		accepted = false
	}
	if accepted {
		s.customs.serve(crd, versions)
	}
	s.setCRDConditions(ctx, crd, accepted)
}

// setCRDConditions writes NamesAccepted and Established, when they change.
func (s *Server) setCRDConditions(ctx context.Context, crd *api.CustomResourceDefinition, accepted bool) {
	status, reason, msg := apiextv1.ConditionTrue, "NoConflicts", "no conflicts found"
	if !accepted {
		status, reason, msg = apiextv1.ConditionFalse, "NameConflict", "the names are served by another CustomResourceDefinition, or its schema does not compile"
	}
	want := []apiextv1.CustomResourceDefinitionCondition{
		{Type: apiextv1.NamesAccepted, Status: status, Reason: reason, Message: msg},
		{Type: apiextv1.Established, Status: status, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
	}
	if !accepted {
		want[1].Reason, want[1].Message = "NotAccepted", "not all names are accepted"
	}
	reg := s.registries[api.CustomResourceDefinitionsResource.Name]
	_, err := reg.Mutate(ctx, "", crd.Name, func(cur api.Object) (api.Object, error) {
		c := cur.(*api.CustomResourceDefinition)
		changed := false
		if accepted && !namesEqual(c.Status.AcceptedNames, c.Spec.Names) {
			c.Status.AcceptedNames, changed = c.Spec.Names, true
		}
		for _, w := range want {
			if setCRDCondition(&c.Status, w) {
				changed = true
			}
		}
		if !changed {
			return nil, errCRDUnchanged
		}
		return c, nil
	})
	if err != nil && !errors.Is(err, errCRDUnchanged) && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("crd", crd.Name).Warn("apiserver: CustomResourceDefinition status")
	}
}

var errCRDUnchanged = errdefs.BadRequest("", "unchanged")

func namesEqual(a, b apiextv1.CustomResourceDefinitionNames) bool {
	return a.Plural == b.Plural && a.Singular == b.Singular && a.Kind == b.Kind && a.ListKind == b.ListKind &&
		slices.Equal(a.ShortNames, b.ShortNames) && slices.Equal(a.Categories, b.Categories)
}

// setCRDCondition sets a condition, saying whether it changed.
func setCRDCondition(st *apiextv1.CustomResourceDefinitionStatus, c apiextv1.CustomResourceDefinitionCondition) bool {
	for i := range st.Conditions {
		cur := &st.Conditions[i]
		if cur.Type != c.Type {
			continue
		}
		if cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
			return false
		}
		if cur.Status != c.Status {
			cur.LastTransitionTime = metav1.Now()
		}
		cur.Status, cur.Reason, cur.Message = c.Status, c.Reason, c.Message
		return true
	}
	c.LastTransitionTime = metav1.Now()
	st.Conditions = append(st.Conditions, c)
	return true
}

// finalizeCRD stops serving a deleted definition's kind, removes its
// objects, then its finalizer, and so the definition.
func (s *Server) finalizeCRD(ctx context.Context, crd *api.CustomResourceDefinition) {
	s.customs.serve(crd, nil)
	if !slices.Contains(crd.Finalizers, api.CRDCleanupFinalizer) {
		return
	}
	if err := s.removeCustomObjects(ctx, crd); err != nil {
		log.WithError(err).WithField("crd", crd.Name).Warn("apiserver: removing a CustomResourceDefinition's objects")
		return
	}
	reg := s.registries[api.CustomResourceDefinitionsResource.Name]
	_, err := reg.Mutate(ctx, "", crd.Name, func(cur api.Object) (api.Object, error) {
		meta := cur.GetObjectMeta()
		meta.Finalizers = slices.DeleteFunc(meta.Finalizers, func(f string) bool { return f == api.CRDCleanupFinalizer })
		return cur, nil
	})
	if err == nil {
		// No finalizer left: the deletion completes.
		_, err = reg.Delete(ctx, "", crd.Name, registry.DeleteOptions{})
	}
	if err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("crd", crd.Name).Warn("apiserver: finalizing a CustomResourceDefinition")
	}
}
