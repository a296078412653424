package apiserver

import (
	"context"
	"fmt"
	"strings"

	"minik8s/apiserver/admission"
	"minik8s/apiserver/authz"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"

	"k8s.io/apimachinery/pkg/api/equality"
)

// admitNodeObject is the part of Kubernetes' NodeRestriction that reads
// what a kubelet writes (restrictNode checks whose objects it writes):
//   - a pod it creates (Kubernetes' mirror pods) uses no Secret, ConfigMap
//     or service account: the node authorizer would let it read them
//     through that pod. The system:node role does not grant creating pods
//     at all; this holds if an admin grants it.
//   - its Node's labels under node-restriction.kubernetes.io/, which
//     admins steer workloads by, and kubernetes.io and k8s.io labels other
//     than a kubelet's own, are not its to set or change: a node could
//     otherwise draw pods meant for other nodes.
//   - its Node's taints, once registered, for the same reason: a node
//     that took off an admin's taint would draw the pods kept off it.
func (s *Server) admitNodeObject(ctx context.Context, obj api.Object) error {
	node, ok := authz.NodeName(rbac.UserOf(ctx))
	if !ok {
		return nil
	}
	switch o := obj.(type) {
	case *api.Pod:
		secrets, configMaps := authz.PodReferences(&o.Spec)
		what := ""
		switch {
		case o.Spec.ServiceAccountName != "" || o.Spec.ServiceAccount != "":
			what = "a service account"
		case len(secrets) > 0:
			what = "secrets"
		case len(configMaps) > 0:
			what = "configmaps"
		case len(authz.PodClaims(&o.Spec)) > 0:
			// It would make the node a reader of the claim and its volume.
			what = "persistentvolumeclaims"
		default:
			return nil
		}
		return fmt.Errorf("pods %q is forbidden: node %q can not create pods that reference %s: %w", o.Name, node, what, errdefs.ErrForbidden)
	case *api.Node:
		var old map[string]string
		if cur, err := s.registries[api.NodesResource.Name].Get(ctx, "", o.Name); err == nil {
			old = cur.GetObjectMeta().Labels
			if !equality.Semantic.DeepEqual(cur.(*api.Node).Spec.Taints, o.Spec.Taints) {
				return fmt.Errorf("nodes %q is forbidden: node %q is not allowed to modify taints: %w", o.Name, node, errdefs.ErrForbidden)
			}
		}
		if bad := admission.ForbiddenNodeLabels(old, o.Labels); len(bad) > 0 {
			return fmt.Errorf("nodes %q is forbidden: node %q is not allowed to set or change the labels %s: %w",
				o.Name, node, strings.Join(bad, ", "), errdefs.ErrForbidden)
		}
	}
	return nil
}
