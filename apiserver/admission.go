package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// Admission checks what authorization cannot see in the path alone: a pod
// that reaches into its node (hostPath, host ports, the host network) is
// admitted only for users allowed to create privileged pods, and a
// kubelet changes only its own Node and the pods bound to it (Kubernetes'
// NodeRestriction).

// privilegedAttrs is the permission privileged pods need: create on
// pods/privileged (cluster-admin has it; the controller manager too, as
// it creates the pods of ReplicaSets whose templates were checked here).
func privilegedAttrs(u rbac.User, ns string) rbac.Attributes {
	return rbac.Attributes{User: u, ResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "privileged", Namespace: ns}
}

// privileges lists how spec reaches into its node.
func privileges(spec *api.PodSpec) []string {
	var out []string
	if spec.HostNetwork {
		out = append(out, "hostNetwork")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			out = append(out, fmt.Sprintf("hostPath volume %q (%s)", v.Name, v.HostPath.Path))
		}
	}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, fmt.Sprintf("host port %d of container %q", p.HostPort, c.Name))
			}
		}
	}
	return out
}

// admit checks a pod or ReplicaSet being created or updated by the
// request's user.
func (s *Server) admit(ctx context.Context, ns string, obj api.Object) error {
	var spec *api.PodSpec
	what := ""
	switch o := obj.(type) {
	case *api.Pod:
		spec, what = &o.Spec, "pods"
	case *api.ReplicaSet:
		spec, what = &o.Spec.Template.Spec, "replicasets"
	case *api.Trigger:
		return s.admitTrigger(ctx, ns, o)
	case *api.Node:
		if node, ok := nodeName(userOf(ctx)); ok && o.Name != node {
			return fmt.Errorf("nodes %q is forbidden: node %q may only register and change its own Node: %w", o.Name, node, errdefs.ErrForbidden)
		}
		return nil
	default:
		return s.noEscalation(ctx, ns, obj)
	}
	u := userOf(ctx)
	if node, ok := nodeName(u); ok && what == "pods" && spec.NodeName != node {
		return fmt.Errorf("pods %q is forbidden: node %q may only make pods bound to itself: %w", obj.GetObjectMeta().Name, node, errdefs.ErrForbidden)
	}
	if p := privileges(spec); len(p) > 0 && !s.authz.allows(privilegedAttrs(u, ns)) {
		return fmt.Errorf("%s %q is forbidden: User %q may not create privileged pods (%s reach into the node): "+
			"that needs create on pods/privileged, which cluster-admin has: %w",
			what, obj.GetObjectMeta().Name, u.Name, strings.Join(p, ", "), errdefs.ErrForbidden)
	}
	return nil
}

// nodeName is the node a kubelet's user stands for.
func nodeName(u rbac.User) (string, bool) {
	name, ok := strings.CutPrefix(u.Name, rbac.NodeUserPrefix)
	if !ok || name == "" || !slices.Contains(u.Groups, rbac.NodesGroup) {
		return "", false
	}
	return name, true
}

// restrictNode refuses a kubelet's write of another node's Node or of a
// pod not bound to it.
func (s *Server) restrictNode(ctx context.Context, a rbac.Attributes) error {
	node, ok := nodeName(a.User)
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
		obj, err := s.registries[api.PodsResource.Name].get(ctx, a.Namespace, a.Name)
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
