package apiserver

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/rbac"

	"k8s.io/apimachinery/pkg/api/equality"
)

// admitRunnerPodUpdate holds a function runner's pod updates to the one
// it needs: claiming a warm generic pod for a function (pkg/function's
// warm.go). The runners' role may update pods for that alone: labels
// could otherwise steer any pod into any Service, and owner references
// hand any pod to any ReplicaSet. So a runner's update of a pod must find
// it warm and change nothing but this: LabelWarm removed, the function's
// labels (LabelFunc, LabelCode) added, AnnotationClaimed added.
func (s *Server) admitRunnerPodUpdate(ctx context.Context, obj api.Object) error {
	u := rbac.UserOf(ctx)
	pod, ok := obj.(*api.Pod)
	if !ok || !slices.Contains(u.Groups, rbac.FuncRunnersGroup) || slices.Contains(u.Groups, rbac.Masters) {
		return nil
	}
	stored, err := s.registries[api.PodsResource.Name].Get(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return nil // a create (a v1 step's pod), or the handler answers 404
	}
	if why := claimOnly(stored.(*api.Pod), pod); why != "" {
		return fmt.Errorf("pods %q is forbidden: %s may only claim a warm function pod: %s: %w", pod.Name, u.Name, why, errdefs.ErrForbidden)
	}
	return nil
}

// claimOnly says how next is not cur claimed for a function, "" when it is.
func claimOnly(cur, next *api.Pod) string {
	if _, warm := cur.Labels[function.LabelWarm]; !warm {
		return "it is not a warm pod"
	}
	if _, warm := next.Labels[function.LabelWarm]; warm {
		return "the claim must remove label " + function.LabelWarm
	}
	if next.Labels[function.LabelFunc] == "" || next.Labels[function.LabelCode] == "" {
		return "the claim must set labels " + function.LabelFunc + " and " + function.LabelCode
	}
	for k, v := range next.Labels {
		if k != function.LabelFunc && k != function.LabelCode && cur.Labels[k] != v {
			return "it may not set label " + k
		}
	}
	for k := range cur.Labels {
		if _, ok := next.Labels[k]; !ok && k != function.LabelWarm {
			return "it may not remove label " + k
		}
	}
	want := maps.Clone(cur.Annotations)
	if want == nil {
		want = map[string]string{}
	}
	want[function.AnnotationClaimed] = next.Annotations[function.AnnotationClaimed]
	if next.Annotations[function.AnnotationClaimed] == "" || !maps.Equal(want, next.Annotations) {
		return "it may change no annotation but " + function.AnnotationClaimed
	}
	if !equality.Semantic.DeepEqual(cur.OwnerReferences, next.OwnerReferences) || !equality.Semantic.DeepEqual(cur.Finalizers, next.Finalizers) {
		return "it may not change owners or finalizers"
	}
	if !equality.Semantic.DeepEqual(cur.Spec, next.Spec) {
		return "it may not change the spec"
	}
	return ""
}
