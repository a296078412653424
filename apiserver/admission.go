package apiserver

import (
	"context"
	"fmt"

	"minik8s/apiserver/admission"
	"minik8s/apiserver/authz"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// Admission checks what authorization cannot see in the path alone: a pod
// that reaches into its node (hostPath, host ports, the host network) is
// admitted only for users allowed to create privileged pods, whatever
// object carries it (a Pod, any template), and a kubelet changes only its
// own Node and the pods bound to it (Kubernetes' NodeRestriction).

// admit checks an object being created or updated by the request's user,
// before it is stored: a kubelet's pods and Node, triggers, RBAC objects.
// Pod specs are admitted by the registry itself (admitPodSpecs), on every
// write that can change them.
func (s *Server) admit(ctx context.Context, ns string, obj api.Object) error {
	if err := s.admitNodeObject(ctx, obj); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *api.Pod:
		if node, ok := authz.NodeName(rbac.UserOf(ctx)); ok && o.Spec.NodeName != node {
			return fmt.Errorf("pods %q is forbidden: node %q may only make pods bound to itself: %w", o.Name, node, errdefs.ErrForbidden)
		}
		return nil
	case *api.Trigger:
		return s.admitTrigger(ctx, ns, o)
	case *api.Func:
		return s.admitFuncTraffic(ctx, ns, o)
	case *api.Node:
		if node, ok := authz.NodeName(rbac.UserOf(ctx)); ok && o.Name != node {
			return fmt.Errorf("nodes %q is forbidden: node %q may only register and change its own Node: %w", o.Name, node, errdefs.ErrForbidden)
		}
		return nil
	}
	return s.noEscalation(ctx, ns, obj)
}

// admitPodSpecs admits the pod specs obj carries against the request's
// user (admission.PodSpecs). The registry calls it on every create and
// update, after defaults and validation, dry runs included; the status and
// scale subresources cannot change a spec.
func (s *Server) admitPodSpecs(ctx context.Context, res api.Resource, old, obj api.Object) error {
	return admission.PodSpecs(res, rbac.UserOf(ctx), s.authz.Allows, old, obj)
}

// restrictNode refuses a kubelet's write of another node's Node or of a
// pod not bound to it.
func (s *Server) restrictNode(ctx context.Context, a rbac.Attributes) error {
	node, ok := authz.NodeName(a.User)
	if !ok || a.Name == "" {
		return nil
	}
	switch a.Verb {
	case "create", "update", "patch", "delete":
	default:
		return nil
	}
	switch a.Resource {
	case api.NodesResource.Name:
		if a.Name != node {
			return fmt.Errorf("nodes %q is forbidden: node %q may only change its own Node: %w", a.Name, node, errdefs.ErrForbidden)
		}
	case api.PodsResource.Name:
		obj, err := s.registries[api.PodsResource.Name].Get(ctx, a.Namespace, a.Name)
		if err != nil {
			return nil // the handler answers 404
		}
		if bound := obj.(*api.Pod).Spec.NodeName; bound != node {
			return fmt.Errorf("pods %q is forbidden: node %q may only change pods bound to it, and this one is bound to %q: %w",
				a.Name, node, bound, errdefs.ErrForbidden)
		}
	}
	return nil
}
