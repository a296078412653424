package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// Admission checks what authorization cannot see in the path alone: a pod
// that reaches into its node (hostPath, host ports, the host network) is
// admitted only for users allowed to create privileged pods, whatever
// object carries it (a Pod, any template), and a kubelet changes only its
// own Node and the pods bound to it (Kubernetes' NodeRestriction).

// privilegedAttrs is the permission privileged pods need: create on
// pods/privileged (cluster-admin has it; the controller manager too, as
// it creates the pods of templates whose writers were checked here).
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
		if node, ok := nodeName(userOf(ctx)); ok && o.Spec.NodeName != node {
			return fmt.Errorf("pods %q is forbidden: node %q may only make pods bound to itself: %w", o.Name, node, errdefs.ErrForbidden)
		}
		return nil
	case *api.Trigger:
		return s.admitTrigger(ctx, ns, o)
	case *api.Node:
		if node, ok := nodeName(userOf(ctx)); ok && o.Name != node {
			return fmt.Errorf("nodes %q is forbidden: node %q may only register and change its own Node: %w", o.Name, node, errdefs.ErrForbidden)
		}
		return nil
	}
	return s.noEscalation(ctx, ns, obj)
}

// admitPodSpecs admits every pod spec obj carries (podSpecsOf: a Pod's, a
// template's, whatever the kind) against the request's user, as if the
// user created those pods: one that reaches into the node needs
// pods/privileged. old is the object being replaced (nil on create): a
// spec it carries unchanged at the same place passes, so that a user may
// scale or relabel an admin's privileged workload, but not change what
// its pods run. The registry calls it on every create and update, after
// defaults and validation, dry runs included; the status and scale
// subresources cannot change a spec.
func (s *Server) admitPodSpecs(ctx context.Context, res api.Resource, old, obj api.Object) error {
	specs := podSpecsOf(obj)
	if len(specs) == 0 {
		return nil
	}
	var before map[string]*api.PodSpec
	for _, at := range specs {
		p := privileges(at.spec)
		if len(p) == 0 {
			continue
		}
		if old != nil && before == nil {
			before = map[string]*api.PodSpec{}
			for _, o := range podSpecsOf(old) {
				before[o.path] = o.spec
			}
		}
		if prev, ok := before[at.path]; ok && samePodSpec(prev, at.spec) {
			continue
		}
		meta := obj.GetObjectMeta()
		u := userOf(ctx)
		if s.authz.allows(privilegedAttrs(u, meta.Namespace)) {
			return nil
		}
		return fmt.Errorf("%s %q is forbidden: User %q may not create privileged pods (%s reach into the node, at %s): "+
			"that needs create on pods/privileged, which cluster-admin has: %w",
			res.Name, meta.Name, u.Name, strings.Join(p, ", "), at.path, errdefs.ErrForbidden)
	}
	return nil
}

// samePodSpec compares two specs as stored (JSON, where an empty list and
// none are the same).
func samePodSpec(a, b *api.PodSpec) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
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
