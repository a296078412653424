package funcapi

import (
	"context"
	"fmt"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// pendingBytes bounds what the arguments of unfinished calls hold, as
// MaxPendingCalls bounds their number: without it a caller could fill
// etcd's quota with calls of large arguments that no runner drains. It
// follows the instances by list and watch (every apiserver sees every
// call this way) and keeps only a size per instance.
type pendingBytes struct {
	reg *registry.Store
	max int64 // <= 0: no bound

	mu sync.Mutex
	// held: namespace/name → the argument bytes of an unfinished
	// instance, 0 once it ended (kept so that a late note of its create
	// does not count it again).
	held  map[string]int64
	total int64
	// reserved: calls of this apiserver being stored now.
	reserved int64
}

func newPendingBytes(reg *registry.Store, max int64) *pendingBytes {
	return &pendingBytes{reg: reg, max: max, held: map[string]int64{}}
}

// pendingView is the little of an instance that pendingBytes lists: the
// instances may hold most of etcd, and their steps, results and traces
// are not decoded.
type pendingView struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           struct {
		Arg api.Bytes `json:"arg"`
	} `json:"spec"`
	Status struct {
		Phase string        `json:"phase"`
		Next  *api.FuncStep `json:"next"`
	} `json:"status"`
}

func (v *pendingView) GetObjectMeta() *api.ObjectMeta { return &v.ObjectMeta }
func (v *pendingView) GetTypeMeta() *api.TypeMeta     { return &v.TypeMeta }

// argBytes is what an instance's arguments hold while it has not ended:
// the call's argument and its next step's.
func argBytes(o api.Object) int64 {
	var v pendingView
	switch inst := o.(type) {
	case *api.FuncInstance:
		v.Spec.Arg, v.Status.Phase, v.Status.Next = inst.Spec.Arg, inst.Status.Phase, inst.Status.Next
	case *pendingView:
		v = *inst
	default:
		return 0
	}
	if v.Status.Phase == api.InstanceSucceeded || v.Status.Phase == api.InstanceFailed {
		return 0
	}
	n := int64(len(v.Spec.Arg))
	if v.Status.Next != nil {
		n += int64(len(v.Status.Next.Arg))
	}
	return n
}

// reserve takes n bytes for a call about to be stored, or refuses it (429)
// past the bound; done gives them back once the create returned, with the
// instance stored (nil if none).
func (p *pendingBytes) reserve(n int64) (done func(created api.Object), err error) {
	if p.max <= 0 {
		return func(api.Object) {}, nil // not followed (run does not run)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total+p.reserved+n > p.max {
		return nil, fmt.Errorf("the arguments of asynchronous calls waiting to run hold %d bytes, and this call's %d would pass the most this cluster takes "+
			"(--max-pending-call-bytes %d); try again shortly: %w", p.total+p.reserved, n, p.max, errdefs.ErrTooManyRequests)
	}
	p.reserved += n
	return func(created api.Object) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.reserved -= n
		if created != nil {
			// Counted now, not when the watch brings it.
			if _, seen := p.held[registry.MirrorKey(created)]; !seen {
				p.set(registry.MirrorKey(created), argBytes(created))
			}
		}
	}, nil
}

func (p *pendingBytes) set(key string, n int64) {
	p.total += n - p.held[key]
	p.held[key] = n
}

func (p *pendingBytes) remove(key string) {
	p.total -= p.held[key]
	delete(p.held, key)
}

// run follows the instances until ctx ends, relisting when the watch breaks.
func (p *pendingBytes) run(ctx context.Context) {
	for ctx.Err() == nil {
		held, total, rev, err := p.list(ctx)
		if err != nil {
			log.WithError(err).Warn("pending calls: listing instances failed")
			wait.Sleep(ctx, time.Second)
			continue
		}
		p.mu.Lock()
		p.held, p.total = held, total
		p.mu.Unlock()
		events, err := p.reg.Watch(ctx, "", rev)
		if err != nil {
			wait.Sleep(ctx, time.Second)
			continue
		}
		for ev := range events {
			if ev.Type == api.Error {
				break
			}
			p.mu.Lock()
			if ev.Type == api.Deleted {
				p.remove(registry.MirrorKey(ev.Object))
			} else {
				p.set(registry.MirrorKey(ev.Object), argBytes(ev.Object))
			}
			p.mu.Unlock()
		}
	}
}

// list reads the sizes of every instance a page at a time (they may hold
// most of etcd), all at one revision.
func (p *pendingBytes) list(ctx context.Context) (held map[string]int64, total, rev int64, err error) {
	held = map[string]int64{}
	after := ""
	for {
		page, err := p.reg.Storage.ListPage(ctx, p.reg.Prefix(""), rev, after, 256, func() api.Object { return &pendingView{} })
		if err != nil {
			return nil, 0, 0, err
		}
		rev = page.Revision
		for _, o := range page.Objects {
			n := argBytes(o)
			held[registry.MirrorKey(o)] = n
			total += n
		}
		if page.Next == "" {
			return held, total, rev, nil
		}
		after = page.Next
	}
}
