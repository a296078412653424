package registry

import (
	"reflect"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
)

// keepJobSelector keeps the selector the server gave a Job when an
// update leaves it out.
func keepJobSelector(cur, next api.Object) {
	if c, ok := cur.(*api.Job); ok {
		validation.KeepJobSelector(c, next.(*api.Job))
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
	// A binding's role cannot change, as in Kubernetes: who may bind it was
	// judged for the role it names.
	switch c := cur.(type) {
	case *api.RoleBinding:
		if n := next.(*api.RoleBinding); n.RoleRef != c.RoleRef {
			return errdefs.Invalid("roleRef", "cannot change roleRef (from %s %q to %s %q)", c.RoleRef.Kind, c.RoleRef.Name, n.RoleRef.Kind, n.RoleRef.Name)
		}
	case *api.ClusterRoleBinding:
		if n := next.(*api.ClusterRoleBinding); n.RoleRef != c.RoleRef {
			return errdefs.Invalid("roleRef", "cannot change roleRef (from %s %q to %s %q)", c.RoleRef.Kind, c.RoleRef.Name, n.RoleRef.Kind, n.RoleRef.Name)
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
