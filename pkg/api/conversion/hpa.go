// Package conversion turns objects between the versions a kind is served
// in and the one it is stored in, with Kubernetes' own conversions: our
// object is read as Kubernetes' type of its version, converted through
// Kubernetes' internal type to the other version, and read back.
package conversion

import (
	"encoding/json"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // registers the conversions

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// What autoscaling/v1 has no field for rides in these annotations, as
// Kubernetes writes them, so that an HPA read and written back in v1
// loses nothing autoscaling/v2 set: the metrics other than CPU
// utilization, their current values, the conditions and the behavior.
const (
	MetricSpecsAnnotation    = autoscaling.MetricSpecsAnnotation
	MetricStatusesAnnotation = autoscaling.MetricStatusesAnnotation
	ConditionsAnnotation     = autoscaling.HorizontalPodAutoscalerConditionsAnnotation
	BehaviorAnnotation       = autoscaling.BehaviorSpecsAnnotation
)

// HPAToV1 is h as autoscaling/v1 shows it; h is not changed.
func HPAToV1(h *api.HorizontalPodAutoscaler) (*api.HorizontalPodAutoscalerV1, error) {
	out := &api.HorizontalPodAutoscalerV1{}
	if err := convert(h, &autoscalingv2.HorizontalPodAutoscaler{}, &autoscalingv1.HorizontalPodAutoscaler{}, out); err != nil {
		return nil, fmt.Errorf("HorizontalPodAutoscaler %s/%s to autoscaling/v1: %w", h.Namespace, h.Name, err)
	}
	out.APIVersion, out.Kind = api.HorizontalPodAutoscalersV1Resource.GroupVersion(), api.HorizontalPodAutoscalersV1Resource.Kind
	return out, nil
}

// HPAFromV1 is an HPA written in autoscaling/v1 in the stored form: what
// the annotations carry is read back (and the annotations dropped); one
// that does not decode is refused, naming it.
func HPAFromV1(in *api.HorizontalPodAutoscalerV1) (*api.HorizontalPodAutoscaler, error) {
	if gv := api.HorizontalPodAutoscalersV1Resource.GroupVersion(); in.APIVersion != "" && in.APIVersion != gv {
		return nil, errdefs.BadRequest("apiVersion", "%q is not %s, the version of this route", in.APIVersion, gv)
	}
	if kind := api.HorizontalPodAutoscalersV1Resource.Kind; in.Kind != "" && in.Kind != kind {
		return nil, errdefs.BadRequest("kind", "%q does not belong here (want %q)", in.Kind, kind)
	}
	for _, key := range []string{MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation, BehaviorAnnotation} {
		if v, ok := in.Annotations[key]; ok && !json.Valid([]byte(v)) {
			return nil, errdefs.BadRequest("metadata.annotations["+key+"]", "is not JSON: it carries what autoscaling/v1 has no field for")
		}
	}
	out := &api.HorizontalPodAutoscaler{}
	if err := convert(in, &autoscalingv1.HorizontalPodAutoscaler{}, &autoscalingv2.HorizontalPodAutoscaler{}, out); err != nil {
		return nil, errdefs.BadRequest("metadata.annotations", "%v", err)
	}
	out.APIVersion, out.Kind = "", ""
	return out, nil
}

// convert reads in as from (Kubernetes' type of in's version), converts
// it through the internal type to to, and reads that into out.
func convert(in any, from, to runtime.Object, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, from); err != nil {
		return err
	}
	internal := &autoscaling.HorizontalPodAutoscaler{}
	if err := legacyscheme.Scheme.Convert(from, internal, nil); err != nil {
		return err
	}
	if err := legacyscheme.Scheme.Convert(internal, to, nil); err != nil {
		return err
	}
	if data, err = json.Marshal(to); err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
