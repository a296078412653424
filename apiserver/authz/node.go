package authz

import (
	"context"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/localpath"
	"minik8s/pkg/rbac"
	"net/http"
	"slices"
	"strings"
)

// NodeAuthorizer is Kubernetes' node authorizer for what a kubelet reads
// of other objects: a node gets a Secret or a ConfigMap only when a pod
// bound to it uses it (a volume, an env var), and lists or watches one
// only when the request names it (fieldSelector metadata.name=NAME) and
// it is such an object. The system:node role grants neither kind, so a
// node reads nothing else of them; what else a node may do is the role's
// (and the node restriction's: restrictNode, admitNodeObject, and
// nodeMayAskToken for service account tokens). It only ever allows, as
// Kubernetes' runs before RBAC. Pods is the pods' registry.
//
// Every node serves the cluster's Ingresses (its kubelet's ingress
// controller), so a node may also get a Secret an Ingress of its namespace
// names for TLS (Ingresses), by name only: what an ingress controller's
// service account reads in Kubernetes, and no more.
//
// A node gets a PersistentVolumeClaim a pod bound to it mounts, and the
// PersistentVolume kept for such a claim (Kubernetes' graph walks the
// same edges), by get only. Its kubelet deletes the local-path volumes
// of its own disk once released under Delete (localpath.ToDelete), as
// k3s's provisioner's helper pod would on that node: so a node lists and
// watches the volumes pinned to it (fieldSelector api.FieldVolumeNode=
// NODE, which the registry reads from the volume's node affinity) and
// deletes such a volume, pinned to it and to be deleted, and no other.
type NodeAuthorizer struct{ Pods, Ingresses, Volumes *registry.Store }

// Authorizes tells whether the node authorizer allows request a (r).
func (n NodeAuthorizer) Authorizes(r *http.Request, a rbac.Attributes) bool {
	node, ok := NodeName(a.User)
	if !ok || !a.ResourceRequest || a.APIGroup != "" || a.Subresource != "" {
		return false
	}
	switch {
	case a.Resource == api.PersistentVolumesResource.Name && a.Namespace == "" && (a.Verb == "list" || a.Verb == "watch"):
		// The volumes pinned to it, which its kubelet deletes once
		// released: the selector the registry applies is the grant.
		return selectedField(r, api.FieldVolumeNode) == node
	case a.Resource == api.PersistentVolumesResource.Name && a.Namespace == "" && a.Verb == "delete" && a.Name != "":
		return n.volumeToDelete(r.Context(), node, a.Name)
	case a.Verb != "get" || a.Name == "":
	case a.Resource == api.PersistentVolumeClaimsResource.Name && a.Namespace != "":
		return n.podsOfNodeUse(r.Context(), node, a.Namespace, a.Resource, a.Name)
	case a.Resource == api.PersistentVolumesResource.Name && a.Namespace == "":
		return n.volumeOfNode(r.Context(), node, a.Name)
	}
	if a.Namespace == "" {
		return false
	}
	if a.Resource != api.SecretsResource.Name && a.Resource != api.ConfigMapsResource.Name {
		return false
	}
	name := a.Name
	switch a.Verb {
	case "get":
	case "list", "watch":
		if name == "" { // a watch of a named path reads that object alone
			name = selectedName(r)
		}
	default:
		return false
	}
	if name == "" {
		return false
	}
	if n.podsOfNodeUse(r.Context(), node, a.Namespace, a.Resource, name) {
		return true
	}
	// Only then the Ingresses: a pod's Secret, the common read, costs no
	// second list.
	return a.Verb == "get" && a.Resource == api.SecretsResource.Name && n.ingressesUse(r.Context(), a.Namespace, name)
}

// ingressesUse tells whether an Ingress in ns serves TLS with Secret name.
func (n NodeAuthorizer) ingressesUse(ctx context.Context, ns, name string) bool {
	if n.Ingresses == nil {
		return false
	}
	ings, _, err := n.Ingresses.List(ctx, ns, registry.Filter{})
	if err != nil {
		return false
	}
	for _, o := range ings {
		for _, t := range o.(*api.Ingress).Spec.TLS {
			if t.SecretName == name {
				return true
			}
		}
	}
	return false
}

// selectedName is the one object a list or watch selects by name
// (fieldSelector metadata.name=NAME), or "".
func selectedName(r *http.Request) string { return selectedField(r, "metadata.name") }

// selectedField is the value a list's or watch's fieldSelector requires
// of field (FIELD=VALUE), or "": the other requirements only narrow it.
func selectedField(r *http.Request, field string) string {
	f, err := registry.ParseFilter("", r.URL.Query().Get("fieldSelector"))
	if err != nil {
		return ""
	}
	path := strings.Split(field, ".")
	for _, req := range f.Fields {
		if !req.Negate && slices.Equal(req.Path, path) && req.Value != "" {
			return req.Value
		}
	}
	return ""
}

// podsOfNodeUse tells whether a pod bound to node, in ns, uses the Secret
// or ConfigMap (resource) name. It reads the pods from the store, so a
// pod bound a moment ago counts and a deleted one no longer does.
func (n NodeAuthorizer) podsOfNodeUse(ctx context.Context, node, ns, resource, name string) bool {
	f, err := registry.ParseFilter("", "spec.nodeName="+node)
	if err != nil {
		return false
	}
	pods, _, err := n.Pods.List(ctx, ns, f)
	if err != nil {
		return false
	}
	for _, o := range pods {
		secrets, configMaps := PodReferences(&o.(*api.Pod).Spec)
		refs := secrets
		switch resource {
		case api.ConfigMapsResource.Name:
			refs = configMaps
		case api.PersistentVolumeClaimsResource.Name:
			refs = PodClaims(&o.(*api.Pod).Spec)
		}
		if slices.Contains(refs, name) {
			return true
		}
	}
	return false
}

// PodReferences are the Secrets and ConfigMaps a pod spec uses, as
// Kubernetes' VisitPodSecretNames and VisitPodConfigmapNames find them.
func PodReferences(spec *api.PodSpec) (secrets, configMaps []string) {
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName != "" {
			secrets = append(secrets, v.Secret.SecretName)
		}
		if v.ConfigMap != nil && v.ConfigMap.Name != "" {
			configMaps = append(configMaps, v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil && src.Secret.Name != "" {
					secrets = append(secrets, src.Secret.Name)
				}
				if src.ConfigMap != nil && src.ConfigMap.Name != "" {
					configMaps = append(configMaps, src.ConfigMap.Name)
				}
			}
		}
	}
	// Every container's, init containers' too: the kubelet reads their
	// variables' sources as it starts each.
	for _, cs := range [][]api.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if r := e.SecretRef; r != nil && r.Name != "" {
					secrets = append(secrets, r.Name)
				}
				if r := e.ConfigMapRef; r != nil && r.Name != "" {
					configMaps = append(configMaps, r.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil && r.Name != "" {
					secrets = append(secrets, r.Name)
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil && r.Name != "" {
					configMaps = append(configMaps, r.Name)
				}
			}
		}
	}
	return secrets, configMaps
}

// NodeName is the node a kubelet's user stands for.
func NodeName(u rbac.User) (string, bool) {
	name, ok := strings.CutPrefix(u.Name, rbac.NodeUserPrefix)
	if !ok || name == "" || !slices.Contains(u.Groups, rbac.NodesGroup) {
		return "", false
	}
	return name, true
}

// PodClaims are the claims a pod spec mounts.
func PodClaims(spec *api.PodSpec) []string {
	var out []string
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// volumeOfNode tells whether the volume name is kept for a claim a pod
// bound to node mounts.
func (n NodeAuthorizer) volumeOfNode(ctx context.Context, node, name string) bool {
	if n.Volumes == nil {
		return false
	}
	o, err := n.Volumes.Get(ctx, "", name)
	if err != nil {
		return false
	}
	r := o.(*api.PersistentVolume).Spec.ClaimRef
	return r != nil && r.Namespace != "" && n.podsOfNodeUse(ctx, node, r.Namespace, api.PersistentVolumeClaimsResource.Name, r.Name)
}

// volumeToDelete tells whether the volume name is one node's kubelet is
// to delete (localpath.ToDelete): pinned to node, released under Delete.
func (n NodeAuthorizer) volumeToDelete(ctx context.Context, node, name string) bool {
	if n.Volumes == nil {
		return false
	}
	o, err := n.Volumes.Get(ctx, "", name)
	if err != nil {
		return false
	}
	of, ok := localpath.ToDelete(o.(*api.PersistentVolume))
	return ok && of == node
}
