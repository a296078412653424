package fields

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"minik8s/pkg/api"
	"minik8s/pkg/api/conversion"
)

// versions converts objects between the versions a kind is served in,
// for the field managers: an apply in autoscaling/v1 merges in v1, and
// the fields other managers set in v2 are compared with its own after
// conversion (structured-merge-diff's version converter asks for it).
// A kind served in one version converts to itself only.
type versions struct{}

func (versions) Convert(in, out, context any) error {
	return fmt.Errorf("no conversion between %T and %T", in, out)
}

func (versions) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	from := in.GetObjectKind().GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if !ok {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("minik8s", from, target)
	}
	if to == from {
		return in, nil
	}
	u, ok := in.(*unstructured.Unstructured)
	// A version no route serves (a client may write any apiVersion in
	// managedFields) is "not registered": the field manager then drops
	// its entries, as Kubernetes' does.
	if !ok || from.Group != api.HorizontalPodAutoscalersResource.Group || from.Kind != api.HorizontalPodAutoscalersResource.Kind ||
		!served(from) || !served(to) {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("minik8s", from, target)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	var out any
	switch to.Version {
	case api.HorizontalPodAutoscalersV1Resource.Version:
		var h api.HorizontalPodAutoscaler
		if err := json.Unmarshal(data, &h); err != nil {
			return nil, err
		}
		if out, err = conversion.HPAToV1(&h); err != nil {
			return nil, err
		}
	case api.HorizontalPodAutoscalersResource.Version:
		var h api.HorizontalPodAutoscalerV1
		if err := json.Unmarshal(data, &h); err != nil {
			return nil, err
		}
		h.APIVersion = ""
		if out, err = conversion.HPAFromV1(&h); err != nil {
			return nil, err
		}
	default:
		return nil, runtime.NewNotRegisteredGVKErrForTarget("minik8s", from, target)
	}
	if data, err = json.Marshal(out); err != nil {
		return nil, err
	}
	converted := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &converted.Object); err != nil {
		return nil, err
	}
	converted.SetGroupVersionKind(to)
	return converted, nil
}

func (versions) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// served: the HPA's versions.
func served(gvk schema.GroupVersionKind) bool {
	return gvk.Version == api.HorizontalPodAutoscalersResource.Version || gvk.Version == api.HorizontalPodAutoscalersV1Resource.Version
}
