// Package downward reads what Kubernetes' downward API gives a pod of
// itself: its fields (fieldRef) and its containers' resources
// (resourceFieldRef), for env values and downwardAPI volume files, with
// Kubernetes' own helpers.
package downward

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"
	"k8s.io/kubernetes/pkg/fieldpath"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Addresses are the pod's and its node's, which only the kubelet knows
// when the container starts.
type Addresses struct {
	PodIP, HostIP string
}

// Field is the value of the pod's field at path ("metadata.name",
// "metadata.labels['app']", "status.podIP"), as the kubelet gives it.
func Field(p *api.Pod, addrs Addresses, path string) (string, error) {
	switch path {
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return addrs.HostIP, nil
	case "status.podIP", "status.podIPs":
		return addrs.PodIP, nil
	}
	if !strings.HasPrefix(path, "metadata.") {
		return "", errdefs.Invalid("fieldRef.fieldPath", "%q is not a field the downward API gives", path)
	}
	meta := &metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: types.UID(p.UID),
		Labels: p.Labels, Annotations: p.Annotations}
	v, err := fieldpath.ExtractFieldPathAsString(meta, path)
	if err != nil {
		return "", errdefs.Invalid("fieldRef.fieldPath", "%v", err)
	}
	return v, nil
}

// Resource is the value of container's resource sel names (its own
// container when sel names none), in sel's divisor; a limit the
// container does not set is the node's allocatable amount.
func Resource(p *api.Pod, container string, sel *corev1.ResourceFieldSelector, allocatable api.ResourceList) (string, error) {
	var pod corev1.Pod
	raw, err := json.Marshal(p)
	if err == nil {
		err = json.Unmarshal(raw, &pod)
	}
	if err != nil {
		return "", fmt.Errorf("reading the pod's resources: %w", err)
	}
	alloc := corev1.ResourceList{}
	for name, q := range allocatable {
		if v, err := resource.ParseQuantity(q); err == nil {
			alloc[corev1.ResourceName(name)] = v
		}
	}
	fs := *sel
	if fs.ContainerName != "" {
		container = fs.ContainerName
	}
	v, err := resourcehelper.ExtractResourceValueByContainerNameAndNodeAllocatable(&fs, &pod, container, alloc)
	if err != nil {
		return "", errdefs.Invalid("resourceFieldRef", "%v", err)
	}
	return v, nil
}
