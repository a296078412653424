package cache

import (
	"minik8s/pkg/api"
	"minik8s/pkg/owner"
)

// ControllerHandler hands add the key of the object's controller, when it
// is of kind, on every add, update and delete: how a controller hears that
// what it made (a Deployment its ReplicaSets, a Job its pods) changed.
func ControllerHandler[PT api.Object](kind string, add func(key string)) Handler[PT] {
	changed := func(o PT) {
		if key, ok := owner.ControllerKey(o.GetObjectMeta(), kind); ok {
			add(key)
		}
	}
	return Handler[PT]{OnAdd: changed, OnUpdate: func(_, o PT) { changed(o) }, OnDelete: changed}
}
