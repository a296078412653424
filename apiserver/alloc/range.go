// Package alloc hands out the members of the apiserver's ranges: cluster
// IPs and node ports to Services, pod CIDRs to Nodes. A member is taken by
// creating its record with its holder in one store transaction, as
// Kubernetes' ipallocator and portallocator take theirs from a bitmap.
package alloc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
	"minik8s/pkg/wait"
)

// Range hands out the members of a range, each to one object, its
// holder: cluster IPs to Services, pod CIDRs to Nodes. A member is taken by
// creating its record (named after it, under prefix) in one transaction
// with its holder: etcd's create-if-absent makes that race-free across
// concurrent creates and across apiservers, and a refused create or a
// crash in between leaves nothing allocated without its holder.
type Range struct {
	store storage.Interface
	// what names a member in messages: "cluster IP", "pod CIDR"; kind
	// is the holders' kind.
	what, kind string
	// rangeText is the range in messages.
	rangeText string
	prefix    string
	size      uint32
	// member is the i-th member; recordName the name of its record.
	member     func(i uint32) string
	recordName func(member string) string
	// newRecord is a member's record for holder; newEmpty an empty record
	// to decode into; holderOf the holder a record names.
	newRecord func(member string, holder api.Object) api.Object
	newEmpty  func() api.Object
	holderOf  func(record api.Object) api.ObjectReference
	// holders is where holders are stored (KeyRoot + resource + "/");
	// holds says whether a stored holder holds member.
	holders  string
	newOwner func() api.Object
	holds    func(holder api.Object, member string) bool

	// cursor is where the next search starts, to spread reuse; behind a
	// pointer so that a dry run's copy of the allocator has its own.
	cursor *rangeCursor
}

type rangeCursor struct {
	mu   sync.Mutex
	next uint32
}

func (c *rangeCursor) get() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

func (c *rangeCursor) set(next uint32) {
	c.mu.Lock()
	c.next = next
	c.mu.Unlock()
}

// Used is the members allocated, by record name.
func (a *Range) Used(ctx context.Context) (map[string]bool, error) {
	objs, _, err := a.store.List(ctx, a.prefix, a.newEmpty)
	if err != nil {
		return nil, err
	}
	used := make(map[string]bool, len(objs))
	for _, o := range objs {
		used[o.GetObjectMeta().Name] = true
	}
	return used, nil
}

// Create stores holder under key with a member allocated to it: asked if
// it is not "" (the caller checked it is in the range), else the next free
// one. set puts a member into the holder's field ("" clears it). A holder
// that exists already is refused as such, an asked member that is taken
// as a conflict on field.
func (a *Range) Create(ctx context.Context, key string, holder api.Object, ttl time.Duration, asked, field string, set func(string)) error {
	if asked != "" {
		set(asked)
		err := a.createWith(ctx, key, holder, asked, ttl)
		if errdefs.IsAlreadyExists(err) && !a.exists(ctx, key) {
			set("")
			return &errdefs.FieldError{Class: errdefs.ErrAlreadyExists, Field: field,
				Reason: fmt.Sprintf("%s is already allocated to another %s", asked, strings.ToLower(a.kind))}
		}
		return err
	}
	for attempt := 0; attempt < 2; attempt++ {
		used, err := a.Used(ctx)
		if err != nil {
			return err
		}
		start := a.cursor.get()
		for k := uint32(0); k < a.size; k++ {
			i := (start + k) % a.size
			m := a.member(i)
			if used[a.recordName(m)] {
				continue
			}
			set(m)
			err := a.createWith(ctx, key, holder, m, ttl)
			if errdefs.IsAlreadyExists(err) {
				if a.exists(ctx, key) {
					set("")
					return err
				}
				continue // the member was taken since the list: try the next
			}
			if err != nil {
				set("")
				return err
			}
			a.cursor.set((i + 1) % a.size)
			return nil
		}
		// Full: reclaim members whose holder is gone, then look again.
		if n, err := a.Repair(ctx); err != nil || n == 0 {
			break
		}
	}
	set("")
	return fmt.Errorf("no %s left in the range %s: %w", a.what, a.rangeText, errdefs.ErrConflict)
}

// Free finds n members that are neither allocated nor in skip, searching
// from where the last search ended; when too few are left it reclaims
// leaked ones first. The caller creates their records (Item) with the
// holder in one transaction, which fails if one was taken meanwhile.
func (a *Range) Free(ctx context.Context, n int, skip map[string]bool) ([]string, error) {
	for attempt := 0; attempt < 2; attempt++ {
		used, err := a.Used(ctx)
		if err != nil {
			return nil, err
		}
		start := a.cursor.get()
		var out []string
		for k := uint32(0); k < a.size && len(out) < n; k++ {
			i := (start + k) % a.size
			m := a.member(i)
			if used[a.recordName(m)] || skip[m] {
				continue
			}
			out = append(out, m)
			if len(out) == n {
				a.cursor.set((i + 1) % a.size)
				return out, nil
			}
		}
		if released, err := a.Repair(ctx); err != nil || released == 0 {
			break
		}
	}
	return nil, fmt.Errorf("no %s left in the range %s: %w", a.what, a.rangeText, errdefs.ErrConflict)
}

// Item is member's record for holder, to create with it.
func (a *Range) Item(member string, holder api.Object) storage.Item {
	return storage.Item{Key: a.prefix + a.recordName(member), Object: a.newRecord(member, holder)}
}

// createWith writes holder and member's record together.
func (a *Range) createWith(ctx context.Context, key string, holder api.Object, member string, ttl time.Duration) error {
	err := a.store.CreateMany(ctx, []storage.Item{
		{Key: key, Object: holder},
		{Key: a.prefix + a.recordName(member), Object: a.newRecord(member, holder)},
	}, ttl)
	if errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("%s %q already exists: %w", a.kind, holder.GetObjectMeta().Name, errdefs.ErrAlreadyExists)
	}
	return err
}

func (a *Range) exists(ctx context.Context, key string) bool {
	return a.store.Get(ctx, key, a.newOwner()) == nil
}

// Repair releases members whose holder no longer holds them (an apiserver
// that died between deleting a holder and releasing its member, say).
func (a *Range) Repair(ctx context.Context) (int, error) {
	objs, _, err := a.store.List(ctx, a.prefix, a.newEmpty)
	if err != nil {
		return 0, err
	}
	released := 0
	for _, rec := range objs {
		// A holder and its member are created together, so a record
		// without its holder is a leak, however young.
		ref := a.holderOf(rec)
		key := a.holders + ref.Name
		if ref.Namespace != "" {
			key = a.holders + ref.Namespace + "/" + ref.Name
		}
		holder := a.newOwner()
		err := a.store.Get(ctx, key, holder)
		name := rec.GetObjectMeta().Name
		if err == nil && holder.GetObjectMeta().UID == ref.UID && a.holds(holder, name) {
			continue
		}
		if err != nil && !errdefs.IsNotFound(err) {
			return released, err
		}
		if err := a.store.Delete(ctx, a.prefix+name, a.newEmpty(), rec.GetObjectMeta().ResourceVersion); err == nil {
			log.WithFields(log.Fields{"member": name, "holder": ref.Namespace + "/" + ref.Name}).Infof("reclaimed leaked %s", a.what)
			released++
		}
	}
	return released, nil
}

// Release frees member if the holder of that uid holds it.
func (a *Range) Release(ctx context.Context, member, uid string) {
	key := a.prefix + a.recordName(member)
	rec := a.newEmpty()
	err := a.store.Get(ctx, key, rec)
	if err == nil {
		if a.holderOf(rec).UID != uid {
			return // reclaimed and given to another holder meanwhile
		}
		err = a.store.Delete(ctx, key, a.newEmpty(), rec.GetObjectMeta().ResourceVersion)
	}
	if err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("member", member).Warnf("releasing %s", a.what)
	}
}

// RunRepair releases, every interval until ctx ends, the members whose
// holder is gone, as Kubernetes' allocator repair does.
func (a *Range) RunRepair(ctx context.Context, interval time.Duration) {
	for {
		if _, err := a.Repair(ctx); err != nil && ctx.Err() == nil {
			log.WithError(err).Debugf("%s repair failed; trying again later", a.what)
		}
		if !wait.Sleep(ctx, interval) {
			return
		}
	}
}

// DryRun is the allocator over a dry run of its store: it finds a free
// member as it would, and allocates nothing.
func (a *Range) DryRun() *Range {
	d := *a
	d.store = storage.DryRun{Interface: a.store}
	d.cursor = &rangeCursor{next: a.cursor.get()}
	return &d
}
