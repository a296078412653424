package registry

import (
	"context"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/wait"
)

// Mirror keeps every object of one registry in memory, by list and watch,
// for checks made on every request (the RBAC policy) without a store read.
// changed runs after each change, outside the lock.
type Mirror struct {
	reg     *Store
	changed func()

	mu   sync.RWMutex
	objs map[string]api.Object // namespace/name
}

func NewMirror(reg *Store, changed func()) *Mirror {
	return &Mirror{reg: reg, changed: changed, objs: map[string]api.Object{}}
}

// Run follows the registry until ctx ends, relisting when the watch breaks.
func (m *Mirror) Run(ctx context.Context) {
	for ctx.Err() == nil {
		objs, rev, err := m.reg.List(ctx, "", Filter{})
		if err != nil {
			log.WithError(err).WithField("resource", m.reg.Resource.Name).Warn("mirror: list failed")
			wait.Sleep(ctx, time.Second)
			continue
		}
		m.mu.Lock()
		clear(m.objs)
		for _, o := range objs {
			m.objs[MirrorKey(o)] = o
		}
		m.mu.Unlock()
		m.changed()
		events, err := m.reg.Watch(ctx, "", rev)
		if err != nil {
			wait.Sleep(ctx, time.Second)
			continue
		}
		for ev := range events {
			if ev.Type == api.Error {
				break
			}
			m.mu.Lock()
			if ev.Type == api.Deleted {
				delete(m.objs, MirrorKey(ev.Object))
			} else {
				m.objs[MirrorKey(ev.Object)] = ev.Object
			}
			m.mu.Unlock()
			m.changed()
		}
	}
}

func MirrorKey(o api.Object) string {
	meta := o.GetObjectMeta()
	return meta.Namespace + "/" + meta.Name
}

// Objects are the mirrored objects; callers only read them.
func (m *Mirror) Objects() []api.Object {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]api.Object, 0, len(m.objs))
	for _, o := range m.objs {
		out = append(out, o)
	}
	return out
}

// get is the mirrored object of key (namespace/name).
func (m *Mirror) get(key string) (api.Object, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	o, ok := m.objs[key]
	return o, ok
}
