package apiserver

import (
	"context"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/storage"
)

// endpointCache follows every Endpoints object by watch, so a call finds a
// ready pod without a store read, and a cold call wakes as soon as one
// becomes ready.
type endpointCache struct {
	reg *registry

	mu      sync.Mutex
	ready   map[string][]api.EndpointAddress // namespace/name → ready addresses
	changed chan struct{}                    // closed and replaced on every change
	synced  bool
	// inflight counts calls in progress per address, to pick the least busy.
	inflight map[string]int
	// next rotates among equally busy addresses.
	next map[string]int
}

func newEndpointCache(reg *registry) *endpointCache {
	return &endpointCache{reg: reg, ready: map[string][]api.EndpointAddress{}, changed: make(chan struct{}),
		inflight: map[string]int{}, next: map[string]int{}}
}

// run follows the store until ctx ends, relisting when the watch breaks.
func (c *endpointCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		objs, rev, err := c.reg.list(ctx, "", filter{})
		if err != nil {
			log.WithError(err).Warn("endpoint cache: list failed")
			sleepCtx(ctx, time.Second)
			continue
		}
		c.replace(objs)
		events, err := c.reg.store.Watch(ctx, c.reg.prefix(""), rev, c.reg.res.New)
		if err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		c.follow(ctx, events)
	}
}

func (c *endpointCache) follow(ctx context.Context, events <-chan storage.Event) {
	for ev := range events {
		if ev.Type == api.Error {
			log.WithError(ev.Err).Debug("endpoint cache: watch ended, relisting")
			return
		}
		ep := ev.Object.(*api.Endpoints)
		c.mu.Lock()
		k := ep.Namespace + "/" + ep.Name
		if ev.Type == api.Deleted {
			delete(c.ready, k)
		} else {
			c.ready[k] = readyAddresses(ep)
		}
		c.broadcastLocked()
		c.mu.Unlock()
	}
}

func (c *endpointCache) replace(objs []api.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready = map[string][]api.EndpointAddress{}
	for _, o := range objs {
		ep := o.(*api.Endpoints)
		c.ready[ep.Namespace+"/"+ep.Name] = readyAddresses(ep)
	}
	c.synced = true
	c.broadcastLocked()
}

func readyAddresses(ep *api.Endpoints) []api.EndpointAddress {
	var out []api.EndpointAddress
	for _, s := range ep.Subsets {
		for _, a := range s.Addresses {
			if a.Port == 0 && len(s.Ports) > 0 {
				a.Port = s.Ports[0].Port
			}
			if a.Port != 0 {
				out = append(out, a)
			}
		}
	}
	return out
}

func (c *endpointCache) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// pick returns the least busy ready address of a service and marks a call
// on it; release must be called when the call ends. ok is false when no
// address is ready; wait is then closed on the next change.
func (c *endpointCache) pick(ns, name string) (addr api.EndpointAddress, release func(), wait <-chan struct{}, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ns + "/" + name
	addrs := c.ready[k]
	if len(addrs) == 0 {
		return api.EndpointAddress{}, nil, c.changed, false
	}
	start := c.next[k] % len(addrs)
	c.next[k]++
	best := -1
	for i := range addrs {
		j := (start + i) % len(addrs)
		if best < 0 || c.inflight[addrKey(addrs[j])] < c.inflight[addrKey(addrs[best])] {
			best = j
		}
	}
	addr = addrs[best]
	ak := addrKey(addr)
	c.inflight[ak]++
	return addr, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.inflight[ak]--; c.inflight[ak] <= 0 {
			delete(c.inflight, ak)
		}
	}, nil, true
}

// drop removes an address that refused a connection until the next update
// of its Endpoints says otherwise.
func (c *endpointCache) drop(ns, name string, bad api.EndpointAddress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ns + "/" + name
	addrs := c.ready[k]
	out := addrs[:0:0]
	for _, a := range addrs {
		if addrKey(a) != addrKey(bad) {
			out = append(out, a)
		}
	}
	c.ready[k] = out
}

func addrKey(a api.EndpointAddress) string {
	return a.IP + ":" + strconv.Itoa(int(a.Port))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
