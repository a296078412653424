package apiserver

import (
	"context"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Claims are provisioned by the local-path provisioner (the controller
// manager's volume controller and the kubelets): the apiserver makes its
// StorageClass, the default one, when there is none of that name, as k3s
// ships it; and, as Kubernetes' DefaultStorageClass admission plugin, it
// gives a claim created without a class the default class's name.

// ensureStorageClass creates the default StorageClass unless one of its
// name exists (a changed one is the administrator's and stays).
func (s *Server) ensureStorageClass(ctx context.Context) error {
	reclaim, mode := api.ReclaimDelete, api.VolumeBindingWaitForFirstConsumer
	_, err := s.registries[api.StorageClassesResource.Name].Create(ctx, "", &api.StorageClass{
		ObjectMeta: api.ObjectMeta{Name: api.DefaultStorageClassName,
			Annotations: map[string]string{api.AnnotationDefaultStorageClass: "true"}},
		Provisioner:       api.LocalPathProvisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	})
	if errdefs.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// betaStorageClassAnnotation is the class annotation of claims before
// storageClassName; Kubernetes' plugin leaves those alone.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// defaultStorageClass names the default class on a claim that names none
// (storageClassName "" asks for no class, and is kept).
func (s *Server) defaultStorageClass(ctx context.Context, obj api.Object) error {
	pvc := obj.(*api.PersistentVolumeClaim)
	return s.defaultClass(ctx, &pvc.Spec.StorageClassName, pvc.Annotations[betaStorageClassAnnotation],
		api.StorageClassesResource, api.AnnotationDefaultStorageClass)
}
