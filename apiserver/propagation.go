package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"sigs.k8s.io/yaml"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// deleteOptions reads a delete's options as Kubernetes does: from the
// body when there is one (a DeleteOptions, JSON, YAML or protobuf), else
// from the query, validated by apimachinery (422). Background (the default
// propagation) leaves the dependents to the garbage collector; Orphan
// keeps them, without the reference to the owner; Foreground keeps the
// owner (its foregroundDeletion finalizer) until the garbage collector has
// deleted them. A negative grace period is one second, as in Kubernetes.
func (h *handlers) deleteOptions(c *gin.Context) (registry.DeleteOptions, error) {
	opts := requestOf(c).query.delete
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	data, err := readBody(c, h.maxBody)
	if err != nil {
		return registry.DeleteOptions{}, err
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if opts, err = decodeDeleteOptions(c, data); err != nil {
			return registry.DeleteOptions{}, err
		}
	}
	return registryDeleteOptions(opts)
}

// registryDeleteOptions validates a delete's options and puts them in the
// registry's terms.
func registryDeleteOptions(opts *metav1.DeleteOptions) (registry.DeleteOptions, error) {
	// Deleting an object the store cannot read is not served.
	opts.IgnoreStoreReadErrorWithClusterBreakingPotential = nil
	if err := invalidOptions("DeleteOptions", metav1validation.ValidateDeleteOptions(opts)); err != nil {
		return registry.DeleteOptions{}, err
	}
	out := registry.DeleteOptions{GracePeriodSeconds: opts.GracePeriodSeconds, DryRun: opts.DryRun}
	if g := out.GracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1)
		out.GracePeriodSeconds = &one
	}
	if p := opts.PropagationPolicy; p != nil {
		out.PropagationPolicy = string(*p)
	}
	if o := opts.OrphanDependents; o != nil && *o { //nolint:staticcheck // still served, as Kubernetes does
		out.PropagationPolicy = registry.PropagationOrphan
	}
	if p := opts.Preconditions; p != nil {
		out.Preconditions = &struct {
			UID             string `json:"uid,omitempty"`
			ResourceVersion string `json:"resourceVersion,omitempty"`
		}{}
		if p.UID != nil {
			out.Preconditions.UID = string(*p.UID)
		}
		if p.ResourceVersion != nil {
			out.Preconditions.ResourceVersion = *p.ResourceVersion
		}
	}
	return out, nil
}

// decodeDeleteOptions reads a delete's body: clients send kind and
// apiVersion, and fields minik8s does not use (not an error, as in
// Kubernetes); another kind is.
func decodeDeleteOptions(c *gin.Context, data []byte) (*metav1.DeleteOptions, error) {
	ctype, err := bodyMediaType(c)
	if err != nil {
		return nil, err
	}
	switch {
	case ctype == protobufContentType:
		data, err = protobufToJSON(data)
	case strings.Contains(ctype, "yaml"):
		if data, err = yaml.YAMLToJSON(data); err != nil {
			err = errdefs.BadRequest("", "malformed YAML: %v", err)
		}
	}
	if err != nil {
		return nil, err
	}
	opts := &metav1.DeleteOptions{}
	if err := json.Unmarshal(data, opts); err != nil {
		return nil, jsonError(err)
	}
	if opts.Kind != "" && opts.Kind != "DeleteOptions" {
		return nil, errdefs.BadRequest("kind", "decoded object cannot be converted to DeleteOptions")
	}
	return opts, nil
}

// orphanDependents removes the references to the object at ns/name from
// the objects of its namespace that it owns, so that the garbage collector
// leaves them when it goes.
func (h *handlers) orphanDependents(ctx context.Context, reg *registry.Store, ns, name string) error {
	owner, err := reg.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	uid := owner.GetObjectMeta().UID
	return h.eachDependent(ctx, reg, ns, uid, func(dep *registry.Store, o api.Object) error {
		_, err := dep.Mutate(ctx, ns, o.GetObjectMeta().Name, func(cur api.Object) (api.Object, error) {
			meta := cur.GetObjectMeta()
			meta.OwnerReferences = slices.DeleteFunc(meta.OwnerReferences, func(r api.OwnerReference) bool { return r.UID == uid })
			return cur, nil
		})
		if err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("orphaning %s %s: %w", dep.Resource.Kind, o.GetObjectMeta().Name, err)
		}
		return nil
	})
}

// foregroundPolicy is the policy a Foreground delete of ns/name comes to:
// Foreground when the object owns something the garbage collector is to
// delete first, Background (nothing to wait for) otherwise.
func (h *handlers) foregroundPolicy(ctx context.Context, reg *registry.Store, ns, name string) (string, error) {
	owner, err := reg.Get(ctx, ns, name)
	if err != nil {
		return "", err
	}
	errFound := errors.New("found")
	err = h.eachDependent(ctx, reg, ns, owner.GetObjectMeta().UID, func(*registry.Store, api.Object) error { return errFound })
	switch {
	case errors.Is(err, errFound):
		return registry.PropagationForeground, nil
	case err != nil:
		return "", err
	}
	return registry.PropagationBackground, nil
}

// eachDependent calls fn for each object of namespace ns owned by uid (a
// cluster-scoped owner has none here), through the registries reg's dry
// run or not.
func (h *handlers) eachDependent(ctx context.Context, reg *registry.Store, ns, uid string, fn func(dep *registry.Store, o api.Object) error) error {
	dry := reg != h.reg
	for _, res := range api.Resources {
		if !res.Namespaced || ns == "" {
			continue
		}
		dep := h.srv.registries[res.Name]
		if dry {
			dep = dep.DryRun()
		}
		objs, _, err := dep.List(ctx, ns, registry.Filter{})
		if err != nil {
			return err
		}
		for _, o := range objs {
			if ownedBy(o, uid) {
				if err := fn(dep, o); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func ownedBy(o api.Object, uid string) bool {
	for _, r := range o.GetObjectMeta().OwnerReferences {
		if r.UID == uid {
			return true
		}
	}
	return false
}
