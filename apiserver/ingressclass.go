package apiserver

import (
	"context"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Ingresses are served by every node's kubelet (its ingress controller,
// minik8s.io/ingress). The apiserver makes that controller's IngressClass,
// the default one, when there is none of that name, as k3s installs
// Traefik's; and, as Kubernetes' DefaultIngressClass admission plugin, it
// gives an Ingress created without a class the default class's name.

// ensureIngressClass creates the default IngressClass unless one of its
// name exists (a changed one is the administrator's and stays).
func (s *Server) ensureIngressClass(ctx context.Context) error {
	classes := s.registries[api.IngressClassesResource.Name]
	_, err := classes.Create(ctx, "", &api.IngressClass{
		ObjectMeta: api.ObjectMeta{Name: api.DefaultIngressClassName,
			Annotations: map[string]string{api.AnnotationDefaultIngressClass: "true"}},
		Spec: api.IngressClassSpec{Controller: api.IngressController},
	})
	if errdefs.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// legacyIngressClassAnnotation is the class annotation of Ingresses
// before ingressClassName; Kubernetes' plugin leaves those alone.
const legacyIngressClassAnnotation = "kubernetes.io/ingress.class"

// defaultIngressClass names the default class on an Ingress that names
// none.
func (s *Server) defaultIngressClass(ctx context.Context, obj api.Object) error {
	ing := obj.(*api.Ingress)
	return s.defaultClass(ctx, &ing.Spec.IngressClassName, ing.Annotations[legacyIngressClassAnnotation],
		api.IngressClassesResource, api.AnnotationDefaultIngressClass)
}
