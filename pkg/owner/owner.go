// Package owner reads and writes the controller reference that ties an
// object to the one that made it (a pod to its ReplicaSet, a ReplicaSet
// to its Deployment, a Job to its CronJob), as Kubernetes' controllers
// use it: one controller per object, found by uid.
package owner

import "minik8s/pkg/api"

// ControllerOf is the reference to the object's controller, nil when it
// has none.
func ControllerOf(m *api.ObjectMeta) *api.OwnerReference {
	for i := range m.OwnerReferences {
		if r := &m.OwnerReferences[i]; r.Controller != nil && *r.Controller {
			return r
		}
	}
	return nil
}

// IsControlledBy says whether uid is the object's controller.
func IsControlledBy(m *api.ObjectMeta, uid string) bool {
	ref := ControllerOf(m)
	return ref != nil && ref.UID == uid
}

// ControllerRef is a reference to owner (of resource res) as the
// controller of what it makes; its deletion in the foreground waits for
// them.
func ControllerRef(res api.Resource, owner api.Object) api.OwnerReference {
	yes := true
	m := owner.GetObjectMeta()
	return api.OwnerReference{APIVersion: res.GroupVersion(), Kind: res.Kind, Name: m.Name, UID: m.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}

// ControllerKey is the cache key ("namespace/name") of the object's
// controller when it is of kind.
func ControllerKey(m *api.ObjectMeta, kind string) (string, bool) {
	ref := ControllerOf(m)
	if ref == nil || ref.Kind != kind {
		return "", false
	}
	return m.Namespace + "/" + ref.Name, true
}
