package etcd

import "minik8s/pkg/api"

// recentObjects holds, for one watch, the object it last decoded of each
// key it saw change lately. The previous value of a MODIFIED event is
// usually the object the same watch decoded at the key's last change (a
// function call's record changes two or three times within seconds), so
// it is taken from here instead of being decoded again: that decode was
// half of a busy watch's cost. The objects are shared read-only, as every
// watch event's object already is with the apiserver's watchers.
//
// Two generations bound it: when the newer holds limit keys it becomes
// the older, and the older is dropped.
type recentObjects struct {
	limit    int
	cur, old map[string]recentObject
}

type recentObject struct {
	rev int64
	obj api.Object
}

func newRecentObjects(limit int) *recentObjects {
	return &recentObjects{limit: limit, cur: map[string]recentObject{}}
}

// get is key's object at mod revision rev, nil if it is not held.
func (r *recentObjects) get(key string, rev int64) api.Object {
	o, ok := r.cur[key]
	if !ok {
		o, ok = r.old[key]
	}
	if !ok || o.rev != rev {
		return nil
	}
	return o.obj
}

// put holds obj as key's object at mod revision rev.
func (r *recentObjects) put(key string, rev int64, obj api.Object) {
	if len(r.cur) >= r.limit {
		if _, ok := r.cur[key]; !ok {
			r.old, r.cur = r.cur, make(map[string]recentObject, r.limit)
		}
	}
	r.cur[key] = recentObject{rev: rev, obj: obj}
}

// forget drops key (deleted: its next life starts with a create).
func (r *recentObjects) forget(key string) {
	delete(r.cur, key)
	delete(r.old, key)
}
