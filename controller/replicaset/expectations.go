package replicaset

import (
	"sync"
	"time"
)

// expectations remember, per ReplicaSet, the pod creations and deletions
// the controller has asked for and not yet seen in its cache. While some
// are outstanding the cache lags behind the controller's own actions, so
// counting pods from it would create or delete too many: the sync then
// only updates status. (Kubernetes' controller expectations.)
type expectations struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[string]*expectation
}

type expectation struct {
	adds int
	// dels holds the uids of pods whose deletion is expected.
	dels map[string]struct{}
	at   time.Time
}

// expectationsTTL bounds how long a missing observation can hold a
// ReplicaSet back (a watch that lost events, say).
const expectationsTTL = 5 * time.Minute

func newExpectations() *expectations {
	return &expectations{ttl: expectationsTTL, now: time.Now, m: map[string]*expectation{}}
}

// satisfied reports whether the cache has caught up with what was asked,
// or waited long enough that it is time to look again anyway.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[key]
	if x == nil {
		return true
	}
	return (x.adds <= 0 && len(x.dels) == 0) || e.now().Sub(x.at) > e.ttl
}

func (e *expectations) get(key string) *expectation {
	x := e.m[key]
	if x == nil {
		x = &expectation{dels: map[string]struct{}{}}
		e.m[key] = x
	}
	return x
}

// expectCreations records that n pods are about to be created.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.adds, x.at = n, e.now()
}

// addCreations records n more pods about to appear (adoptions beside
// creations).
func (e *expectations) addCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.adds, x.at = x.adds+n, e.now()
}

// expectDeletions records the pods about to be deleted.
func (e *expectations) expectDeletions(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.at = e.now()
	for _, u := range uids {
		x.dels[u] = struct{}{}
	}
}

// creationObserved: a pod of the ReplicaSet appeared in the cache (or its
// creation failed and will never appear).
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[key]; x != nil && x.adds > 0 {
		x.adds--
	}
}

// deletionObserved: the pod is being deleted or gone (or its deletion
// failed and will never be seen).
func (e *expectations) deletionObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[key]; x != nil {
		delete(x.dels, uid)
	}
}

// forget drops what is remembered of a ReplicaSet that is gone.
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
