// Package etcd implements storage.Interface on etcd v3: resourceVersion is the
// key's mod revision, updates are transactions on it, and watches resume from
// a revision.
package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// Store is an etcd-backed storage.Interface.
type Store struct {
	// client watches, grants leases and asks for the members' status,
	// alarms and defragmentation; kv reads and writes (client's, or an
	// in-process client's: NewInProcess).
	client  *clientv3.Client
	kv      clientv3.KV
	closeKV func() error

	mu    sync.Mutex
	lease leaseCache
	// alarms as the space check last saw them (space.go); spaceCheck
	// asks it to run now.
	alarms     Alarms
	spaceCheck chan struct{}
}

var _ storage.Interface = (*Store)(nil)

// New returns a store on an open etcd client.
func New(client *clientv3.Client) *Store {
	return &Store{client: client, kv: client.KV, spaceCheck: make(chan struct{}, 1)}
}

// NewInProcess returns a store whose reads and writes call the etcd
// server of this process through inProcess (Embedded.Client), and whose
// watches, leases and maintenance go through client, a client of its
// listener. Only unary calls take the in-process way: etcd's adapter for
// streams can block for good when a watch is cancelled while events flow
// (etcd-io/etcd#20716), and its maintenance server has no defragmentation
// wired.
func NewInProcess(client, inProcess *clientv3.Client) *Store {
	s := New(client)
	s.kv, s.closeKV = inProcess.KV, inProcess.Close
	return s
}

// Close closes the store's clients.
func (s *Store) Close() error {
	err := s.client.Close()
	if s.closeKV != nil {
		err = errors.Join(err, s.closeKV())
	}
	return err
}

// leaseCache shares one lease among objects created close together with
// the same TTL (within a tenth of it, at most a minute), so that a burst of
// short-lived objects does not grant a lease each.
type leaseCache struct {
	id      clientv3.LeaseID
	ttl     time.Duration
	granted time.Time
}

func leaseReuseWindow(ttl time.Duration) time.Duration {
	return min(ttl/10, time.Minute)
}

func (s *Store) leaseFor(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.lease.id != 0 && s.lease.ttl == ttl && now.Sub(s.lease.granted) < leaseReuseWindow(ttl) {
		return s.lease.id, nil
	}
	// The object lives between ttl and ttl+window.
	secs := int64((ttl + leaseReuseWindow(ttl) + time.Second - 1) / time.Second)
	resp, err := s.client.Grant(leader(ctx), secs)
	if err != nil {
		s.noteWriteErr(err)
		return 0, wrapErr(err)
	}
	s.lease = leaseCache{id: resp.ID, ttl: ttl, granted: now}
	return resp.ID, nil
}

// ttlOpts are the options of a put that expires after ttl (none for 0).
func (s *Store) ttlOpts(ctx context.Context, ttl time.Duration) ([]clientv3.OpOption, error) {
	if ttl <= 0 {
		return nil, nil
	}
	id, err := s.leaseFor(ctx, ttl)
	if err != nil {
		return nil, err
	}
	return []clientv3.OpOption{clientv3.WithLease(id)}, nil
}

// leader makes a request fail at once when the member has no leader (its
// cluster lost quorum) instead of waiting for one: the apiserver answers
// 503 and its health checks say why.
func leader(ctx context.Context) context.Context { return clientv3.WithRequireLeader(ctx) }

func encode(obj api.Object) ([]byte, error) {
	meta := obj.GetObjectMeta()
	rv := meta.ResourceVersion
	// resourceVersion is the key's mod revision; it is never stored.
	meta.ResourceVersion = ""
	defer func() { meta.ResourceVersion = rv }()
	// No HTML escaping: encoding/json would store each of <, > and & as
	// six bytes, so a value under the API's limits could grow past etcd's.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func decode(data []byte, rev int64, out api.Object) error {
	// Unmarshal merges into what is there; start from the zero value so
	// that a reused object carries nothing over.
	v := reflect.ValueOf(out).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding stored object: %w", err)
	}
	out.GetObjectMeta().ResourceVersion = strconv.FormatInt(rev, 10)
	return nil
}

func wrapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("etcd: %w: %w", errdefs.ErrUnavailable, err)
	}
	if errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("etcd: %w: %w", errdefs.ErrGone, err)
	}
	if isTooLarge(err) {
		return fmt.Errorf("etcd: %w: %w", errdefs.ErrTooLarge, err)
	}
	if isNoSpace(err) {
		// A server error (500), as Kubernetes answers it, with etcd's
		// message: not unavailable, retrying at once does not help.
		return fmt.Errorf("%w: the database reached its quota (--etcd-quota-bytes); "+
			"deleting objects frees space, and the apiserver then compacts, defragments and disarms etcd's NOSPACE alarm", err)
	}
	return fmt.Errorf("etcd: %w: %w", errdefs.ErrUnavailable, err)
}

// isTooLarge tells etcd's refusals of a request for its size: the server's
// "request is too large" (above its MaxRequestBytes) and gRPC's
// ResourceExhausted for a message above either side's limit. etcd's other
// ResourceExhausted errors (quota, rate) are not about this request's size.
func isTooLarge(err error) bool {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) {
		return true
	}
	if errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace) ||
		errors.Is(err, rpctypes.ErrTooManyRequests) || errors.Is(err, rpctypes.ErrGRPCRequestTooManyRequests) {
		return false
	}
	return status.Code(err) == codes.ResourceExhausted
}

// writeErr is wrapErr for a write of data at key, naming its size when
// etcd refused it as too large.
func writeErr(key string, data []byte, err error) error {
	if isTooLarge(err) {
		return fmt.Errorf("%s: the object takes %d bytes once encoded, more than etcd accepts in one request: %w",
			key, len(data), wrapErr(err))
	}
	return wrapErr(err)
}

func (s *Store) Create(ctx context.Context, key string, obj api.Object, ttl time.Duration) error {
	data, err := encode(obj)
	if err != nil {
		return err
	}
	opts, err := s.ttlOpts(ctx, ttl)
	if err != nil {
		return err
	}
	resp, err := s.kv.Txn(leader(ctx)).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data), opts...)).
		Commit()
	if err != nil {
		s.noteWriteErr(err)
		return writeErr(key, data, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s: %w", key, errdefs.ErrAlreadyExists)
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(resp.Header.Revision, 10)
	return nil
}

func (s *Store) CreateMany(ctx context.Context, items []storage.Item, ttl time.Duration) error {
	if len(items) == 0 {
		return nil
	}
	opts, err := s.ttlOpts(ctx, ttl)
	if err != nil {
		return err
	}
	cmps := make([]clientv3.Cmp, 0, len(items))
	puts := make([]clientv3.Op, 0, len(items))
	size := 0
	for _, it := range items {
		data, err := encode(it.Object)
		if err != nil {
			return err
		}
		size += len(data)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(it.Key), "=", 0))
		puts = append(puts, clientv3.OpPut(it.Key, string(data), opts...))
	}
	resp, err := s.kv.Txn(leader(ctx)).If(cmps...).Then(puts...).Commit()
	if err != nil {
		s.noteWriteErr(err)
		if isTooLarge(err) {
			return fmt.Errorf("%d objects taking %d bytes once encoded, more than etcd accepts in one request: %w",
				len(items), size, wrapErr(err))
		}
		return wrapErr(err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("one of the %d objects written together (%q the first) exists: %w", len(items), items[0].Object.GetObjectMeta().Name, errdefs.ErrAlreadyExists)
	}
	rv := strconv.FormatInt(resp.Header.Revision, 10)
	for _, it := range items {
		it.Object.GetObjectMeta().ResourceVersion = rv
	}
	return nil
}

func (s *Store) Get(ctx context.Context, key string, out api.Object) error {
	resp, err := s.kv.Get(leader(ctx), key)
	if err != nil {
		return wrapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return fmt.Errorf("%s: %w", key, errdefs.ErrNotFound)
	}
	return decode(resp.Kvs[0].Value, resp.Kvs[0].ModRevision, out)
}

func (s *Store) List(ctx context.Context, prefix string, newObj storage.NewFunc) ([]api.Object, int64, error) {
	resp, err := s.kv.Get(leader(ctx), prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, wrapErr(err)
	}
	out := make([]api.Object, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		obj := newObj()
		if err := decode(kv.Value, kv.ModRevision, obj); err != nil {
			return nil, 0, err
		}
		out = append(out, obj)
	}
	return out, resp.Header.Revision, nil
}

// ListAt returns the objects under prefix as they were at revision rev:
// a compacted revision is ErrGone ("too old resource version").
func (s *Store) ListAt(ctx context.Context, prefix string, rev int64, newObj storage.NewFunc) ([]api.Object, error) {
	resp, err := s.kv.Get(leader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		return nil, wrapErr(err)
	}
	out := make([]api.Object, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		obj := newObj()
		if err := decode(kv.Value, kv.ModRevision, obj); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

func (s *Store) ListPage(ctx context.Context, prefix string, rev int64, after string, limit int, newObj storage.NewFunc) (storage.Page, error) {
	from := prefix
	if after != "" {
		from = after + "\x00"
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(int64(limit))}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := s.kv.Get(leader(ctx), from, opts...)
	if err != nil {
		return storage.Page{}, wrapErr(err)
	}
	p := storage.Page{Revision: resp.Header.Revision, Objects: make([]api.Object, 0, len(resp.Kvs)), Sizes: make([]int, 0, len(resp.Kvs))}
	if rev > 0 {
		p.Revision = rev
	}
	for _, kv := range resp.Kvs {
		obj := newObj()
		if err := decode(kv.Value, kv.ModRevision, obj); err != nil {
			return storage.Page{}, err
		}
		p.Objects = append(p.Objects, obj)
		p.Sizes = append(p.Sizes, len(kv.Value))
	}
	if resp.More && len(resp.Kvs) > 0 {
		p.Next = string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
	return p, nil
}

func (s *Store) Update(ctx context.Context, key string, obj api.Object) error {
	data, err := encode(obj)
	if err != nil {
		return err
	}
	cmp := clientv3.Compare(clientv3.Version(key), ">", 0)
	if rv := obj.GetObjectMeta().ResourceVersion; rv != "" {
		rev, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			return errdefs.BadRequest("metadata.resourceVersion", "%q is not a resource version", rv)
		}
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", rev)
	}
	resp, err := s.kv.Txn(leader(ctx)).
		If(cmp).
		Then(clientv3.OpPut(key, string(data), clientv3.WithIgnoreLease())).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		s.noteWriteErr(err)
		return writeErr(key, data, err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return fmt.Errorf("%s: %w", key, errdefs.ErrNotFound)
		}
		return fmt.Errorf("%s: resourceVersion %s is stale, the object has been modified; read it again and retry: %w",
			key, obj.GetObjectMeta().ResourceVersion, errdefs.ErrConflict)
	}
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(resp.Header.Revision, 10)
	return nil
}

func (s *Store) GuaranteedUpdate(ctx context.Context, key string, newObj storage.NewFunc, fn storage.UpdateFunc) (api.Object, error) {
	for {
		resp, err := s.kv.Get(leader(ctx), key)
		if err != nil {
			return nil, wrapErr(err)
		}
		if len(resp.Kvs) == 0 {
			return nil, fmt.Errorf("%s: %w", key, errdefs.ErrNotFound)
		}
		stored, modRev := resp.Kvs[0].Value, resp.Kvs[0].ModRevision
		cur := newObj()
		if err := decode(stored, modRev, cur); err != nil {
			return nil, err
		}
		rv := cur.GetObjectMeta().ResourceVersion
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		// An update that changes nothing is not written, as Kubernetes'
		// store does: its resourceVersion stays, and no watch hears of it
		// (a server-side apply of an unchanged manifest, a controller
		// writing the status it already wrote).
		next.GetObjectMeta().ResourceVersion = rv
		if data, err := encode(next); err == nil && bytes.Equal(data, stored) {
			return next, nil
		}
		// The write is conditional on the revision that was read.
		err = s.Update(ctx, key, next)
		if errdefs.IsConflict(err) {
			if ctx.Err() != nil {
				return nil, wrapErr(ctx.Err())
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return next, nil
	}
}

func (s *Store) Delete(ctx context.Context, key string, out api.Object, preconditionRV string) error {
	cmp := clientv3.Compare(clientv3.Version(key), ">", 0)
	if preconditionRV != "" {
		rev, err := strconv.ParseInt(preconditionRV, 10, 64)
		if err != nil {
			return errdefs.BadRequest("metadata.resourceVersion", "%q is not a resource version", preconditionRV)
		}
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", rev)
	}
	resp, err := s.kv.Txn(leader(ctx)).
		If(cmp).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return wrapErr(err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) > 0 && len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return fmt.Errorf("%s: %w", key, errdefs.ErrNotFound)
		}
		return fmt.Errorf("%s: resourceVersion %s is stale: %w", key, preconditionRV, errdefs.ErrConflict)
	}
	del := resp.Responses[0].GetResponseDeleteRange()
	if len(del.PrevKvs) == 0 {
		return fmt.Errorf("%s: %w", key, errdefs.ErrNotFound)
	}
	return decode(del.PrevKvs[0].Value, resp.Header.Revision, out)
}

func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.kv.Get(leader(ctx), "/", clientv3.WithCountOnly())
	if err != nil {
		return 0, wrapErr(err)
	}
	return resp.Header.Revision, nil
}

// WatchBuffer is how many events a watch holds for a slow consumer.
const WatchBuffer = 1024

func (s *Store) Watch(ctx context.Context, prefix string, fromRV int64, newObj storage.NewFunc) (<-chan storage.Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	// RequireLeader: a watch on a member cut off from the cluster ends
	// instead of hanging silently.
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), prefix,
		clientv3.WithPrefix(), clientv3.WithRev(fromRV+1), clientv3.WithPrevKV())
	out := make(chan storage.Event, WatchBuffer)
	recent := newRecentObjects(recentKeys)
	go func() {
		defer cancel()
		defer close(out)
		// A consumer WatchBuffer events behind is cut off (the channel
		// closes) rather than left to grow etcd's client buffer without
		// bound; it resumes from the last revision it got.
		send := func(ev storage.Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			default:
				return false
			}
		}
		for resp := range wch {
			if resp.CompactRevision != 0 {
				send(storage.Event{Type: api.Error, Err: fmt.Errorf("revision %d was compacted (oldest is %d); list again: %w",
					fromRV, resp.CompactRevision, errdefs.ErrGone)})
				return
			}
			if err := resp.Err(); err != nil {
				send(storage.Event{Type: api.Error, Err: wrapErr(err)})
				return
			}
			for _, ev := range resp.Events {
				e, err := convert(ev, newObj, recent)
				if err != nil {
					send(storage.Event{Type: api.Error, Err: err})
					return
				}
				e.Size = len(ev.Kv.Value)
				if ev.PrevKv != nil {
					e.Size += len(ev.PrevKv.Value)
				}
				if !send(e) {
					return
				}
			}
		}
		if ctx.Err() == nil {
			send(storage.Event{Type: api.Error, Err: fmt.Errorf("etcd watch closed: %w", errdefs.ErrUnavailable)})
		}
	}()
	return out, nil
}

// recentKeys is how many keys' last objects a watch holds (recentObjects).
const recentKeys = 1024

func convert(ev *clientv3.Event, newObj storage.NewFunc, recent *recentObjects) (storage.Event, error) {
	obj := newObj()
	key, rev := string(ev.Kv.Key), ev.Kv.ModRevision
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if ev.PrevKv == nil {
			return storage.Event{}, fmt.Errorf("delete event for %s without its previous value", ev.Kv.Key)
		}
		if err := decode(ev.PrevKv.Value, rev, obj); err != nil {
			return storage.Event{}, err
		}
		recent.forget(key)
		return storage.Event{Type: api.Deleted, Object: obj, Revision: rev}, nil
	case ev.IsCreate():
		if err := decode(ev.Kv.Value, rev, obj); err != nil {
			return storage.Event{}, err
		}
		recent.put(key, rev, obj)
		return storage.Event{Type: api.Added, Object: obj, Revision: rev}, nil
	default:
		if err := decode(ev.Kv.Value, rev, obj); err != nil {
			return storage.Event{}, err
		}
		e := storage.Event{Type: api.Modified, Object: obj, Revision: rev}
		if ev.PrevKv != nil {
			prev := recent.get(key, ev.PrevKv.ModRevision)
			if prev == nil {
				prev = newObj()
				if err := decode(ev.PrevKv.Value, ev.PrevKv.ModRevision, prev); err != nil {
					return storage.Event{}, err
				}
			}
			e.PrevObject = prev
		}
		recent.put(key, rev, obj)
		return e, nil
	}
}
