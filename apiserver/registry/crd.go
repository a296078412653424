package registry

import (
	"context"
	"errors"
	"slices"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"minik8s/pkg/api"
)

// crdStrategy is Kubernetes' CustomResourceDefinition strategy: the
// status is the apiserver's (its conditions) but for the versions ever
// stored, which always hold the storage version; and a deletion first
// holds the definition (customresourcecleanup) until its objects are gone.
type crdStrategy struct{ defaultStrategy }

func (crdStrategy) prepareForCreate(obj api.Object) {
	crd := obj.(*api.CustomResourceDefinition)
	crd.Status = apiextv1.CustomResourceDefinitionStatus{}
	addStoredVersion(crd)
}

func (crdStrategy) prepareForUpdate(_ *Store, _, next api.Object) error {
	addStoredVersion(next.(*api.CustomResourceDefinition))
	return nil
}

// addStoredVersion notes the storage version among the stored ones.
func addStoredVersion(crd *api.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage && !slices.Contains(crd.Status.StoredVersions, v.Name) {
			crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
		}
	}
}

func (crdStrategy) beginDelete(ctx context.Context, r *Store, ns, name string, _ DeleteOptions, _, _ string) (api.Object, bool, error) {
	// The finalizer is added at the first deletion, as Kubernetes'
	// CRD storage does; the definition's controller then removes the
	// objects and the finalizer.
	_, err := r.Mutate(ctx, ns, name, func(cur api.Object) (api.Object, error) {
		meta := cur.GetObjectMeta()
		if meta.DeletionTimestamp != nil || slices.Contains(meta.Finalizers, api.CRDCleanupFinalizer) {
			return nil, errUnchanged
		}
		meta.Finalizers = append(meta.Finalizers, api.CRDCleanupFinalizer)
		return cur, nil
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	return nil, false, err
}

// customStrategy is a custom resource's: with a status subresource, a
// created object's status is the controllers' to set.
type customStrategy struct {
	defaultStrategy
	status bool
}

func (s customStrategy) prepareForCreate(obj api.Object) {
	if o, ok := obj.(*api.CustomObject); ok && s.status {
		o.Status = nil
	}
}

// errUnchanged ends a Mutate that has nothing to write.
var errUnchanged = errors.New("unchanged")
