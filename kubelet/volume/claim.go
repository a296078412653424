package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// ClaimGetter reads a pod's claims and the volumes bound to them (the
// node authorizer lets a node read those of its pods alone).
type ClaimGetter interface {
	GetClaim(ctx context.Context, namespace, name string) (*api.PersistentVolumeClaim, error)
	GetVolume(ctx context.Context, name string) (*api.PersistentVolume, error)
}

// claimVolume is the directory of the volume bound to the pod's claim. A
// claim not bound yet is an error the pod's worker retries (its
// containers wait, saying so); a local-path volume's directory is made
// here, on its node, as k3s's provisioner's helper pod makes it.
func claimVolume(ctx context.Context, ns string, src *api.PersistentVolumeClaimVolumeSource, field string, g any) (Volume, error) {
	cg, ok := g.(ClaimGetter)
	if !ok {
		return Volume{}, errdefs.Invalid(field+".persistentVolumeClaim", "this node reads no claims")
	}
	pvc, err := cg.GetClaim(ctx, ns, src.ClaimName)
	if err != nil {
		return Volume{}, fmt.Errorf("%s: persistentvolumeclaim %q: %v", field, src.ClaimName, err)
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != api.ClaimBound {
		return Volume{}, fmt.Errorf("%s: persistentvolumeclaim %q is not bound yet", field, src.ClaimName)
	}
	pv, err := cg.GetVolume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return Volume{}, fmt.Errorf("%s: persistentvolume %q of claim %q: %v", field, pvc.Spec.VolumeName, src.ClaimName, err)
	}
	if r := pv.Spec.ClaimRef; r == nil || r.UID != pvc.UID {
		return Volume{}, fmt.Errorf("%s: persistentvolume %q is not bound to claim %q", field, pv.Name, src.ClaimName)
	}
	var path string
	switch {
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	}
	if !filepath.IsAbs(path) {
		return Volume{}, errdefs.Invalid(field+".persistentVolumeClaim", "persistentvolume %q has no absolute local or hostPath path", pv.Name)
	}
	path = filepath.Clean(path)
	if pv.Annotations[api.AnnotationProvisionedBy] == api.LocalPathProvisioner {
		// Containers may run as any user, as local-path's 0777.
		if err := os.MkdirAll(path, 0o777); err != nil {
			return Volume{}, fmt.Errorf("%s: making the directory of persistentvolume %q: %w", field, pv.Name, err)
		}
		_ = os.Chmod(path, 0o777)
	}
	return Volume{HostPath: path, ReadOnly: src.ReadOnly}, nil
}
