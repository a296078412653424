package cache

import (
	"minik8s/pkg/client"
	"minik8s/pkg/labels"
)

// Lister reads an informer's cache. What it returns is shared: do not
// change it (DeepCopy first).
type Lister[T any, PT client.Object[T]] struct {
	inf *Informer[T, PT]
}

// Get returns the object with that namespace ("" for cluster-scoped
// objects) and name.
func (l *Lister[T, PT]) Get(namespace, name string) (PT, bool) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	return l.GetByKey(key)
}

// GetByKey returns the object with that cache key.
func (l *Lister[T, PT]) GetByKey(key string) (PT, bool) {
	l.inf.mu.RLock()
	defer l.inf.mu.RUnlock()
	obj, ok := l.inf.items[key]
	return obj, ok
}

// List returns the objects of every namespace whose labels match sel
// (nil or empty: all).
func (l *Lister[T, PT]) List(sel labels.Selector) []PT {
	return l.ListNamespace("", sel)
}

// ListNamespace returns the objects in namespace ("" for all) whose labels
// match sel (nil or empty: all).
func (l *Lister[T, PT]) ListNamespace(namespace string, sel labels.Selector) []PT {
	l.inf.mu.RLock()
	defer l.inf.mu.RUnlock()
	out := make([]PT, 0, len(l.inf.items))
	for _, obj := range l.inf.items {
		m := obj.GetObjectMeta()
		if namespace != "" && m.Namespace != namespace {
			continue
		}
		if sel.Matches(m.Labels) {
			out = append(out, obj)
		}
	}
	return out
}

// ByIndex returns the objects whose index named index has value value.
func (l *Lister[T, PT]) ByIndex(index, value string) []PT {
	l.inf.mu.RLock()
	defer l.inf.mu.RUnlock()
	keys := l.inf.indices[index][value]
	out := make([]PT, 0, len(keys))
	for k := range keys {
		out = append(out, l.inf.items[k])
	}
	return out
}

// Len is the number of cached objects.
func (l *Lister[T, PT]) Len() int {
	l.inf.mu.RLock()
	defer l.inf.mu.RUnlock()
	return len(l.inf.items)
}
