package apiserver

import (
	"reflect"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// keepJobSelector keeps the selector the server gave a Job, and the labels
// of its template that go with it, when an update leaves them out.
func keepJobSelector(cur, next api.Object) {
	c, ok := cur.(*api.Job)
	if !ok {
		return
	}
	n := next.(*api.Job)
	if n.Spec.Selector != nil || c.Spec.Selector == nil {
		return
	}
	n.Spec.Selector = c.Spec.Selector
	if n.Spec.Template.Labels == nil {
		n.Spec.Template.Labels = map[string]string{}
	}
	for _, k := range []string{api.LabelJobControllerUID, api.LabelLegacyUID, api.LabelJobName, api.LabelLegacyJobName} {
		if v, ok := c.Spec.Template.Labels[k]; ok {
			if _, set := n.Spec.Template.Labels[k]; !set {
				n.Spec.Template.Labels[k] = v
			}
		}
	}
}

// checkImmutable refuses changes Kubernetes refuses too.
func checkImmutable(cur, next api.Object) error {
	if c, ok := cur.(*api.Job); ok {
		n := next.(*api.Job)
		if !reflect.DeepEqual(c.Spec.Selector, n.Spec.Selector) {
			return errdefs.Invalid("spec.selector", "a Job's selector cannot change")
		}
		if !reflect.DeepEqual(c.Spec.Template, n.Spec.Template) {
			return errdefs.Invalid("spec.template", "a Job's pod template cannot change")
		}
	}
	if c, ok := cur.(*api.Pod); ok {
		n := next.(*api.Pod)
		if c.Spec.NodeName != "" && n.Spec.NodeName != c.Spec.NodeName {
			return errdefs.Invalid("spec.nodeName", "a bound pod cannot move (from %q to %q)", c.Spec.NodeName, n.Spec.NodeName)
		}
	}
	return nil
}
