package volume

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"

	"minik8s/kubelet/downward"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// downwardAPIVolume writes the files of a downwardAPI volume: each item's
// field of the pod (metadata: name, namespace, uid, labels, annotations)
// or container resource, at the item's path. They are written when the
// pod starts and again every RefreshPeriod: a change of the pod's labels
// or annotations reaches them, as in Kubernetes.
func downwardAPIVolume(pod *api.Pod, src *corev1.DownwardAPIVolumeSource, field, dir string, allocatable api.ResourceList) error {
	mode := os.FileMode(corev1.DownwardAPIVolumeSourceDefaultMode)
	if src.DefaultMode != nil {
		mode = os.FileMode(*src.DefaultMode)
	}
	files, modes, err := downwardFiles(pod, src.Items, mode, field+".downwardAPI", allocatable)
	if err != nil {
		return err
	}
	return writeFiles(dir, files, func(name string) os.FileMode { return modes[name] })
}

// downwardFiles are the downward API items' files and their modes.
func downwardFiles(pod *api.Pod, items []corev1.DownwardAPIVolumeFile, mode os.FileMode, field string, allocatable api.ResourceList) (map[string][]byte, map[string]os.FileMode, error) {
	files := map[string][]byte{}
	modes := map[string]os.FileMode{}
	for i, item := range items {
		at := fmt.Sprintf("%s.items[%d]", field, i)
		if err := checkPath(item.Path); err != nil {
			return nil, nil, errdefs.Invalid(at+".path", "%q must be a relative path without '..'", item.Path)
		}
		var v string
		var err error
		switch {
		case item.FieldRef != nil:
			v, err = downward.Field(pod, downward.Addresses{}, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			v, err = downward.Resource(pod, "", item.ResourceFieldRef, allocatable)
		default:
			err = errdefs.Invalid(at, "names no fieldRef or resourceFieldRef")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", at, err)
		}
		files[item.Path] = []byte(v)
		modes[item.Path] = mode
		if item.Mode != nil {
			modes[item.Path] = os.FileMode(*item.Mode)
		}
	}
	return files, modes, nil
}
