// Package storage is the apiserver's store of API objects: CRUD with
// compare-and-swap on resourceVersion, and watch resumable from a revision.
package storage

import (
	"context"
	"time"

	"minik8s/pkg/api"
)

// KeyRoot is where the apiserver keeps its objects, under it
// resource/[namespace/]name, and the records it keeps beside them
// (allocations, node passwords) under their own prefixes.
const KeyRoot = "/registry/"

// Event is one change seen by a watch. Err is set (and Type is api.Error)
// when the watch cannot go on, for example because its revision was compacted.
type Event struct {
	Type   api.EventType
	Object api.Object
	// PrevObject is the state before a MODIFIED event, so that a filtered
	// watch can tell an object entering or leaving its selection.
	PrevObject api.Object
	Revision   int64
	// Size is what the change took in the store, in bytes (the object's
	// and, for a MODIFIED event, its previous state's encoding).
	Size int
	Err  error
}

// Item is an object and the key to store it at.
type Item struct {
	Key    string
	Object api.Object
}

// Page is one page of a list (Interface.ListPage).
type Page struct {
	Objects []api.Object
	// Sizes are what each object takes in the store, in bytes.
	Sizes []int
	// Revision the page was read at: the next pages are read at it too.
	Revision int64
	// Next is the key to continue after, "" when the list is done.
	Next string
}

// NewFunc makes an empty object to decode into.
type NewFunc func() api.Object

// UpdateFunc returns the object to write in place of cur (which it may
// change and return); returning an error aborts the update.
type UpdateFunc func(cur api.Object) (api.Object, error)

// Interface is what the apiserver needs from a store.
type Interface interface {
	// Create stores obj at key if nothing is there; ttl > 0 makes it expire.
	// It sets obj's resourceVersion.
	Create(ctx context.Context, key string, obj api.Object, ttl time.Duration) error
	// CreateMany stores many objects in one transaction, each at its key,
	// if nothing is at any of them (else ErrAlreadyExists and nothing is
	// written); ttl > 0 makes them expire. It sets their resourceVersions.
	// One write of many small objects costs the store about one of them.
	CreateMany(ctx context.Context, items []Item, ttl time.Duration) error
	// Get decodes the object at key into out.
	Get(ctx context.Context, key string, out api.Object) error
	// List returns the objects under prefix and the revision read at.
	List(ctx context.Context, prefix string, newObj NewFunc) ([]api.Object, int64, error)
	// ListPage returns up to limit objects under prefix whose keys
	// follow after ("" from the first), as of revision rev (0: now), so
	// that a long list is read and sent a page at a time, all at one
	// revision. A compacted rev is ErrGone.
	ListPage(ctx context.Context, prefix string, rev int64, after string, limit int, newObj NewFunc) (Page, error)
	// Update replaces the object at key. When obj carries a resourceVersion
	// it must be the stored one (else ErrConflict).
	Update(ctx context.Context, key string, obj api.Object) error
	// GuaranteedUpdate reads the object at key, applies fn and writes the
	// result, retrying when someone else wrote in between.
	GuaranteedUpdate(ctx context.Context, key string, newObj NewFunc, fn UpdateFunc) (api.Object, error)
	// Delete removes the object at key (if its resourceVersion is preconditionRV,
	// when that is not empty) and decodes the last state into out.
	Delete(ctx context.Context, key string, out api.Object, preconditionRV string) error
	// Watch streams the changes under prefix after revision fromRV.
	// The channel closes when ctx ends or after an Error event.
	Watch(ctx context.Context, prefix string, fromRV int64, newObj NewFunc) (<-chan Event, error)
	// Revision is the store's current revision.
	Revision(ctx context.Context) (int64, error)
}

// RevisionLister is a store that lists as of a past revision, as
// Kubernetes serves a list with resourceVersionMatch=Exact.
type RevisionLister interface {
	// ListAt returns the objects under prefix at revision rev; a
	// revision compacted away is ErrGone.
	ListAt(ctx context.Context, prefix string, rev int64, newObj NewFunc) ([]api.Object, error)
}
