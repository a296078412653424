package funcrunner

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function/call"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// instances is the runner's controller of unfinished FuncInstances: it
// claims the unclaimed ones and those whose runner's Lease expired (a
// compare-and-swap of status.runner, so one runner wins), and drives each
// it holds in a goroutine of its own.
type instances struct {
	client   *client.Client
	self     string
	informer *cache.Informer[api.FuncInstance, *api.FuncInstance]
	members  *members
	stepper  *stepper
	calls    *callbacks
	queue    *workqueue.Queue
	// maxBytes bounds an instance as written (Config.MaxInstanceBytes).
	maxBytes int

	// ctx is the runner's lifetime, set before run; drivers end with it.
	ctx     context.Context
	mu      sync.Mutex
	driving map[string]bool
	// driven holds, for instances whose driver here has ended, the last
	// resourceVersion the driver saw: the informer may still bring older
	// copies (claimed by this runner, not ended), which must not start
	// the step that was already run again.
	driven map[string]uint64
	wg     sync.WaitGroup
}

// claimDelay is how long a runner leaves an unclaimed instance to the
// runner preferred for it before claiming it itself.
const claimDelay = time.Second

func newInstances(c *client.Client, self string, inf *cache.Informer[api.FuncInstance, *api.FuncInstance], m *members, s *stepper, cb *callbacks) *instances {
	in := &instances{client: c, self: self, informer: inf, members: m, stepper: s, calls: cb,
		queue: workqueue.New(), driving: map[string]bool{}, driven: map[string]uint64{}}
	inf.AddEventHandler(cache.Handler[*api.FuncInstance]{
		OnAdd:    func(o *api.FuncInstance) { in.queue.Add(cache.Key(o)) },
		OnUpdate: func(_, o *api.FuncInstance) { in.queue.Add(cache.Key(o)) },
		// An ended instance leaves the informer: its sync forgets it.
		OnDelete: func(o *api.FuncInstance) { in.queue.Add(cache.Key(o)) },
	})
	return in
}

// run syncs instances until ctx ends. A runner's Lease expires without an
// event, so every second the instances of runners no longer live are
// looked at again.
func (in *instances) run(ctx context.Context, workers int) {
	go wait.Every(ctx, time.Second, func() {
		now := time.Now()
		for _, inst := range in.informer.Lister().List(nil) {
			if inst.Status.Runner != in.self && !in.members.isLive(inst.Status.Runner, now) {
				in.queue.Add(cache.Key(inst))
			}
		}
	})
	workqueue.Run(ctx, in.queue, workers, "funcinstances", in.sync)
	in.wg.Wait()
}

func (in *instances) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	inst, ok := in.informer.Lister().Get(ns, name)
	if !ok || call.Terminal(inst) {
		in.forgetDriven(key)
		return nil
	}
	if in.isDriving(key) || in.stale(key, inst) {
		return nil
	}
	if inst.Status.Runner == in.self {
		// Ours (resumed after a restart under the same identity, or handed
		// over by a synchronous call whose driver has ended).
		in.drive(key, call.Copy(inst))
		return nil
	}
	now := time.Now()
	if inst.Status.Runner != "" && in.members.isLive(inst.Status.Runner, now) {
		return nil
	}
	if p := preferred(in.members.live(now), inst.Name); p != in.self && in.queue.NumRequeues(key) == 0 {
		// Another runner should take it; look again later in case it does not.
		in.queue.AddAfter(key, claimDelay)
		return nil
	}
	claim := call.Copy(inst)
	prev := claim.Status.Runner
	call.Claim(claim, in.self)
	claimed, err := in.client.FuncInstances(ns).UpdateStatus(ctx, claim)
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
		return nil // someone else moved it; the informer brings the news
	}
	if err != nil {
		return fmt.Errorf("claiming instance %s: %w", key, err)
	}
	if prev != "" {
		log.WithFields(log.Fields{"instance": name, "from": prev}).Info("funcrunner: took over an instance of a runner that is gone")
	}
	in.drive(key, claimed)
	return nil
}

func (in *instances) isDriving(key string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.driving[key]
}

// stale says whether inst is a copy older than what a driver here has
// already seen of it.
func (in *instances) stale(key string, inst *api.FuncInstance) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	last, ok := in.driven[key]
	if !ok {
		return false
	}
	rv, err := strconv.ParseUint(inst.ResourceVersion, 10, 64)
	if err == nil && rv <= last {
		return true
	}
	delete(in.driven, key) // newer news: decide on it
	return false
}

// markDriven notes the last copy a driver of key saw, so that older copies
// the informer still brings are not driven again.
func (in *instances) markDriven(key string, last *api.FuncInstance) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.markDrivenLocked(key, last)
}

func (in *instances) markDrivenLocked(key string, last *api.FuncInstance) {
	rv, err := strconv.ParseUint(last.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	// Gone from the informer already (its delete was handled): no older
	// copy can follow, and a mark would never be forgotten.
	ns, name := cache.SplitKey(key)
	if _, ok := in.informer.Lister().Get(ns, name); !ok {
		return
	}
	in.driven[key] = rv
}

func (in *instances) forgetDriven(key string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.driven, key)
}
