// Package expectations lets a controller that creates and deletes pods
// know when its cache has caught up with its own actions (Kubernetes'
// controller expectations).
package expectations

import (
	"sync"
	"time"
)

// Expectations remember, per owner (a ReplicaSet, a Job), the pod
// creations and deletions the controller has asked for and not yet seen
// in its cache. While some are outstanding the cache lags behind the
// controller's own actions, so counting pods from it would create or
// delete too many: the sync then only updates status.
type Expectations struct {
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

// TTL bounds how long a missing observation can hold an owner back (a
// watch that lost events, say).
const TTL = 5 * time.Minute

// New returns empty expectations.
func New() *Expectations {
	return &Expectations{ttl: TTL, now: time.Now, m: map[string]*expectation{}}
}

// Satisfied reports whether the cache has caught up with what was asked,
// or waited long enough that it is time to look again anyway.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[key]
	if x == nil {
		return true
	}
	return (x.adds <= 0 && len(x.dels) == 0) || e.now().Sub(x.at) > e.ttl
}

func (e *Expectations) get(key string) *expectation {
	x := e.m[key]
	if x == nil {
		x = &expectation{dels: map[string]struct{}{}}
		e.m[key] = x
	}
	return x
}

// ExpectCreations records that n pods are about to be created.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.adds, x.at = n, e.now()
}

// AddCreations records n more pods about to appear (adoptions beside
// creations).
func (e *Expectations) AddCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.adds, x.at = x.adds+n, e.now()
}

// ExpectDeletions records the pods about to be deleted.
func (e *Expectations) ExpectDeletions(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.at = e.now()
	for _, u := range uids {
		x.dels[u] = struct{}{}
	}
}

// CreationObserved: a pod of the owner appeared in the cache (or its
// creation failed and will never appear).
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[key]; x != nil && x.adds > 0 {
		x.adds--
	}
}

// DeletionObserved: the pod is being deleted or gone (or its deletion
// failed and will never be seen).
func (e *Expectations) DeletionObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[key]; x != nil {
		delete(x.dels, uid)
	}
}

// Forget drops what is remembered of an owner that is gone.
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
