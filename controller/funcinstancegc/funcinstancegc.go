// Package funcinstancegc keeps the call records within a budget: of the
// finished FuncInstances (Succeeded or Failed) across the cluster it keeps
// the newest Budget and deletes the older ones, so that etcd holds a
// bounded number of records whatever the call rate (the apiserver's TTL
// bounds how long each is kept). Unfinished instances are never deleted.
// It is level-triggered: every pass looks at all instances, and any change
// to a finished one asks for a pass.
package funcinstancegc

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function/call"
	"minik8s/pkg/wait"
)

// Name is the controller's name in the controller manager.
const Name = "funcinstancegc"

// DefaultBudget is how many finished instances are kept.
const DefaultBudget = 10000

const (
	// minGap spaces passes, so a burst of calls is served by one pass.
	minGap = 100 * time.Millisecond
	// sweepPeriod is how often a pass runs without a change, which also
	// retries failed deletes.
	sweepPeriod = time.Minute
	// retryDelay is how soon a pass runs again after a failed delete.
	retryDelay = 2 * time.Second
)

// deleteFunc deletes one instance, on the condition that it is still the
// object seen (its UID).
type deleteFunc func(ctx context.Context, fi *api.FuncInstance) error

// Controller is the retention GC of FuncInstances.
type Controller struct {
	instances *cache.Informer[api.FuncInstance, *api.FuncInstance]
	del       deleteFunc
	budget    int
	retry     time.Duration
	kick      chan struct{}

	mu sync.Mutex
	// deleting holds the UIDs deleted and not yet gone from the cache, so
	// that a pass in between neither deletes them again nor counts them.
	deleting map[string]struct{}
}

// New returns the GC of c's FuncInstances, keeping budget finished ones
// (DefaultBudget if budget <= 0).
func New(c *client.Client, budget int) *Controller {
	del := func(ctx context.Context, fi *api.FuncInstance) error {
		_, err := c.FuncInstances(fi.Namespace).Delete(ctx, fi.Name, client.DeleteOptions{UID: fi.UID})
		return err
	}
	return newController(slimSource{c.FuncInstances("").AllNamespaces()}, del, budget)
}

func newController(lw cache.ListerWatcher[*api.FuncInstance], del deleteFunc, budget int) *Controller {
	if budget <= 0 {
		budget = DefaultBudget
	}
	c := &Controller{
		instances: cache.NewInformer[api.FuncInstance](lw),
		del:       del, budget: budget, retry: retryDelay,
		kick:     make(chan struct{}, 1),
		deleting: map[string]struct{}{},
	}
	c.instances.AddEventHandler(cache.Handler[*api.FuncInstance]{
		OnAdd: func(fi *api.FuncInstance) {
			if call.Terminal(fi) {
				c.poke()
			}
		},
		OnUpdate: func(_, fi *api.FuncInstance) {
			if call.Terminal(fi) {
				c.poke()
			}
		},
	})
	return c
}

func (c *Controller) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run collects until ctx ends, with up to workers deletes at once.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.instances.Start(ctx)
	if !cache.WaitForSync(ctx, c.instances) {
		return
	}
	sweep := time.NewTicker(sweepPeriod)
	defer sweep.Stop()
	for {
		c.collect(ctx, max(workers, 1))
		if !wait.Sleep(ctx, minGap) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-sweep.C:
		}
	}
}

// collect runs one pass: it deletes the finished instances beyond the budget.
func (c *Controller) collect(ctx context.Context, workers int) {
	all := c.instances.Lister().List(nil)
	c.mu.Lock()
	present := make(map[string]struct{}, len(all))
	candidates := make([]*api.FuncInstance, 0, len(all))
	for _, fi := range all {
		present[fi.UID] = struct{}{}
		if _, ok := c.deleting[fi.UID]; !ok {
			candidates = append(candidates, fi)
		}
	}
	for uid := range c.deleting {
		if _, ok := present[uid]; !ok {
			delete(c.deleting, uid) // its deletion reached the cache
		}
	}
	victims := overBudget(candidates, c.budget)
	for _, fi := range victims {
		c.deleting[fi.UID] = struct{}{}
	}
	c.mu.Unlock()
	if len(victims) == 0 {
		return
	}

	work := make(chan *api.FuncInstance)
	var wg sync.WaitGroup
	var failed sync.Once
	for range min(workers, len(victims)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fi := range work {
				if err := c.del(ctx, fi); err != nil && !errdefs.IsNotFound(err) {
					// Not deleted (or a different object now has the name):
					// the next pass decides again.
					c.mu.Lock()
					delete(c.deleting, fi.UID)
					c.mu.Unlock()
					if ctx.Err() == nil {
						log.WithError(err).WithField("funcinstance", cache.Key(fi)).Debug("funcinstance gc: delete failed, will retry")
						failed.Do(func() { time.AfterFunc(c.retry, c.poke) })
					}
				}
			}
		}()
	}
	for _, fi := range victims {
		select {
		case work <- fi:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	log.WithFields(log.Fields{"deleted": len(victims), "budget": c.budget}).Debug("funcinstance gc: oldest finished instances deleted")
}

// overBudget returns the finished instances beyond the budget: the oldest
// by status.completionTime, then creationTimestamp (then key, to be
// deterministic). Unfinished instances are never chosen.
func overBudget(items []*api.FuncInstance, budget int) []*api.FuncInstance {
	var done []*api.FuncInstance
	for _, fi := range items {
		if call.Terminal(fi) {
			done = append(done, fi)
		}
	}
	if len(done) <= budget {
		return nil
	}
	slices.SortFunc(done, func(a, b *api.FuncInstance) int {
		if c := timeOf(a.Status.CompletionTime).Compare(timeOf(b.Status.CompletionTime)); c != 0 {
			return c
		}
		if c := timeOf(a.CreationTimestamp).Compare(timeOf(b.CreationTimestamp)); c != 0 {
			return c
		}
		return cmp.Compare(cache.Key(a), cache.Key(b))
	})
	return done[:len(done)-budget]
}

// timeOf reads an optional time; none sorts first, as the oldest.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// slimSource lists and watches FuncInstances keeping only what the GC
// reads (metadata, phase, completion time): a record's argument, result
// and steps can be large, and the cache holds every instance.
type slimSource struct {
	rc *client.ResourceClient[api.FuncInstance, *api.FuncInstance]
}

func (s slimSource) List(ctx context.Context, opts client.ListOptions) ([]*api.FuncInstance, string, error) {
	items, rv, err := s.rc.List(ctx, opts)
	for _, fi := range items {
		call.Slim(fi)
	}
	return items, rv, err
}

func (s slimSource) Watch(ctx context.Context, opts client.ListOptions) <-chan client.Event[*api.FuncInstance] {
	in := s.rc.Watch(ctx, opts)
	out := make(chan client.Event[*api.FuncInstance], cap(in))
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Object != nil {
				// The watch's own bookkeeping keeps this object too: slimmed
				// in place, it keeps the small one.
				call.Slim(ev.Object)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
