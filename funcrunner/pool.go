package funcrunner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/wait"
)

const (
	// dropTTL is how long an address that refused a call is left out when
	// its Endpoints do not change meanwhile.
	dropTTL = 3 * time.Second
	// recheckInterval is how often a waiting step looks again without
	// news, for drops and verdicts that expired.
	recheckInterval = time.Second
)

func podKey(ns, name string) string { return "pod:" + ns + "/" + name }

// pool sends v2 steps to the ready pods of their function's Endpoints: the
// least busy first, never more than containerConcurrency at once to one
// pod, and only to pods the function's ReplicaSet owns.
type pool struct {
	s      *stepper
	eps    *cache.Lister[api.Endpoints, *api.Endpoints]
	owners *podOwners

	mu sync.Mutex
	// inflight counts the calls posted (or about to be) per address.
	inflight map[string]int
	// next rotates among equally busy addresses, per Endpoints.
	next map[string]int
	// drops are the addresses that refused a call, per Endpoints, and when.
	drops map[string]map[string]time.Time
	// queues order the steps waiting for a slot, per Endpoints.
	queues map[string][]turn
}

func newPool(s *stepper, eps *cache.Lister[api.Endpoints, *api.Endpoints]) *pool {
	return &pool{s: s, eps: eps, owners: newPodOwners(s),
		inflight: map[string]int{}, next: map[string]int{}, drops: map[string]map[string]time.Time{},
		queues: map[string][]turn{}}
}

// invoke runs one call of f on one of its pods. With no pod ready, or none
// with a free slot, the step counts as waiting, which makes the runner
// report at once so the pool grows, and waits for a change up to the cold
// start timeout.
func (p *pool) invoke(ctx context.Context, f *api.Func, call stepCall) (*function.Result, stepTarget, error) {
	ns := funcNamespace(f)
	key := ns + "/" + function.ObjectName(f.Name)
	fnKey := ns + "/" + f.Name
	cc := validation.ContainerConcurrency(&f.Spec)
	coldStart := p.s.cfg.ColdStartTimeout
	deadline := time.NewTimer(coldStart)
	defer deadline.Stop()
	var recheck *time.Ticker
	waiting := false
	var waitStart, waitEnd time.Time // the first wait for a pod, for the trace
	var t turn                       // our place in the function's queue while we wait
	// An older revision's unit takes no warm pod: a claimed pod joins
	// the function's own pool.
	triedWarm := function.IsUnit(f.Name)
	var lost []string // the pods lost under this step, and why
	defer func() {
		if t != nil {
			p.leave(key, t)
		}
		if waiting {
			p.s.demand.unwait(fnKey)
		}
		if recheck != nil {
			recheck.Stop()
		}
	}()
	for {
		if p.s.codeChanged(f) {
			// Its pods are being replaced: the step goes to the new code
			// (or its revision's own pool), and so do the others waiting.
			if t != nil {
				p.leave(key, t)
				t = nil
			}
			p.wakeFirst(key)
			return nil, stepTarget{waitStart: waitStart, waitEnd: time.Now(), lost: lost}, errFuncChanged
		}
		addrs := p.candidates(f, key)
		addr, ok := p.reserve(key, addrs, cc)
		if !ok && len(addrs) == 0 && !triedWarm {
			// No pod at all: a warm pod claimed now serves at once, and
			// before the demand says the function waits, so that its
			// ReplicaSet adopts the pod instead of making one.
			triedWarm = true
			// Code known not to start would only spend a warm pod.
			if err := p.s.cannotStart(ctx, f); err != nil {
				return nil, stepTarget{}, err
			}
			claimStart := time.Now()
			err := p.s.warm.claim(ctx, f, key)
			if err == nil {
				if waitStart.IsZero() {
					waitStart, waitEnd = claimStart, time.Now()
				}
				continue
			}
			if !errors.Is(err, errNoWarmPod) {
				return nil, stepTarget{}, err
			}
		}
		if !ok {
			if !waiting {
				waiting = true
				p.s.demand.wait(fnKey)
				if waitStart.IsZero() {
					waitStart = time.Now()
				}
			}
			if t == nil {
				// Queued, look once more: a slot freed before we were
				// in line woke no one.
				t = p.join(key)
				continue
			}
			if len(addrs) == 0 {
				// No pod serves: the function may be gone, or its pods
				// may fail to start, and waiting would not change that.
				if err := p.s.cannotStart(ctx, f); err != nil {
					return nil, stepTarget{}, err
				}
			}
			if recheck == nil {
				recheck = time.NewTicker(recheckInterval)
			}
			if err := p.await(ctx, key, t, recheck, deadline); err != nil {
				if len(addrs) > 0 {
					return nil, stepTarget{}, fmt.Errorf("cold start timed out after %s: no pod had a free slot (containerConcurrency %d): %w", coldStart, cc, err)
				}
				if errors.Is(err, errdefs.ErrTimeout) {
					return nil, stepTarget{}, fmt.Errorf("cold start timed out after %s: no pod became ready: %w", coldStart, err)
				}
				return nil, stepTarget{}, err
			}
			continue
		}
		if t != nil {
			p.leave(key, t)
			t = nil
		}
		// More slots may be free: the next in line tries too.
		p.wakeFirst(key)
		if waiting {
			waiting = false
			p.s.demand.unwait(fnKey)
			waitEnd = time.Now()
		}
		// A pod this runner handed the function needs no owner check.
		if err := p.checkOwner(ctx, f, key, addr); err != nil {
			p.release(key, addr)
			if errors.Is(err, errNotOwned) {
				// Its verdict is kept: candidates leaves it out from now on.
				continue
			}
			if ctx.Err() != nil {
				return nil, stepTarget{}, ctx.Err()
			}
			log.WithError(err).WithField("function", fnKey).Warn("function runner: checking a pod's owner failed")
			wait.Sleep(ctx, 100*time.Millisecond)
			continue
		}
		tgt := stepTarget{node: addr.NodeName, waitStart: waitStart, waitEnd: waitEnd}
		if addr.TargetRef != nil {
			tgt.pod = addr.TargetRef.Name
		}
		res, err := postStep(ctx, p.s.http, addr.IP, addr.Port, f, call)
		p.release(key, addr)
		if errors.Is(err, errNotServed) && ctx.Err() == nil {
			// The pod went away or is draining: the call did not run there.
			p.drop(key, addr)
			p.s.warm.forget(key, addr)
			continue
		}
		if errors.Is(err, errPodLost) && ctx.Err() == nil && len(lost) < maxLostPods {
			// The caller was promised the call: it runs again, on a pod
			// that answers (a dead one refuses the next dial, and goes).
			where := tgt.pod
			if where == "" {
				where = addr.IP
			}
			lost = append(lost, fmt.Sprintf("%s: %v", where, err))
			log.WithError(err).WithFields(log.Fields{"function": fnKey, "pod": tgt.pod}).Warn("function runner: a pod was lost under a call; running it again")
			continue
		}
		tgt.lost = lost
		return res, tgt, err
	}
}

// checkOwner is the owner check of addr, passed by the pods this runner
// claimed for f lately.
func (p *pool) checkOwner(ctx context.Context, f *api.Func, key string, addr api.EndpointAddress) error {
	if p.s.warm.isClaimed(key, addr) {
		return nil
	}
	return p.owners.check(ctx, f, addr)
}

// cannotStart says why a call of f waiting for a pod will not get one: f
// was deleted (or replaced by a new function of its name) meanwhile, or
// the functions controller found that the pods of f's current code fail
// to start (its Ready condition, for the generation it was found on).
// The cache only clears a call to go on waiting: it may lag a fix or a
// new function, so a failure is confirmed with the apiserver.
func (s *stepper) cannotStart(ctx context.Context, f *api.Func) error {
	if function.IsUnit(f.Name) {
		return s.unitCannotStart(ctx, f)
	}
	ns := funcNamespace(f)
	if cur, ok := s.funcs.Get(ns, f.Name); ok && !replaced(f, cur) && startFailure(cur) == nil {
		return nil
	}
	cur, err := s.c.Funcs(ns).Get(ctx, f.Name)
	if errdefs.IsNotFound(err) || (err == nil && replaced(f, cur)) {
		return fmt.Errorf("the function was deleted while the call waited for a pod: %w", errdefs.ErrNotFound)
	}
	if err != nil {
		return nil
	}
	return startFailure(cur)
}

// replaced says cur is another function of f's name: f was deleted.
func replaced(f, cur *api.Func) bool { return f.UID != "" && cur.UID != f.UID }

// startFailure is cur's Ready condition when it says, for cur's current
// generation, that its pods cannot start.
func startFailure(cur *api.Func) error {
	for _, c := range cur.Status.Conditions {
		if c.Type == api.FuncReady && c.Status == api.ConditionFalse && c.ObservedGeneration == cur.Generation {
			return fmt.Errorf("cannot start: %s: %s", c.Reason, c.Message)
		}
	}
	return nil
}

// candidates are the ready addresses of the Endpoints key that neither
// refused a call lately nor are known not to be the function's pods.
func (p *pool) candidates(f *api.Func, key string) []api.EndpointAddress {
	var all []api.EndpointAddress
	if ep, ok := p.eps.GetByKey(key); ok {
		all = readyAddresses(ep)
	}
	// The pods claimed lately, until the Endpoints list them.
	for _, c := range p.s.warm.addresses(key) {
		if !slices.ContainsFunc(all, func(a api.EndpointAddress) bool { return addrKey(a) == addrKey(c) }) {
			all = append(all, c)
		}
	}
	now := time.Now()
	p.mu.Lock()
	dropped := p.drops[key]
	out := all[:0]
	for _, a := range all {
		if at, ok := dropped[addrKey(a)]; ok && now.Sub(at) < dropTTL {
			continue
		}
		out = append(out, a)
	}
	p.mu.Unlock()
	usable := out[:0]
	code := p.s.hashes.of(f).code
	for _, a := range out {
		if !p.owners.knownBad(f, a) && !p.runsOtherCode(f, a, code) {
			usable = append(usable, a)
		}
	}
	return usable
}

// runsOtherCode says whether the cache knows addr's pod to run other code
// than f's: a pod of the revision f had before, not yet replaced, which
// would answer for the wrong revision. A pod the cache does not have yet
// is new, so f's.
func (p *pool) runsOtherCode(f *api.Func, a api.EndpointAddress, code string) bool {
	if a.TargetRef == nil || a.TargetRef.Name == "" {
		return false
	}
	pod, ok := p.s.pods.Get(funcNamespace(f), a.TargetRef.Name)
	return ok && pod.Labels[function.LabelCode] != "" && pod.Labels[function.LabelCode] != code
}

// reserve takes a slot on the least busy of addrs that has one (fewer than
// cc calls); release must follow.
func (p *pool) reserve(key string, addrs []api.EndpointAddress, cc int) (api.EndpointAddress, bool) {
	if len(addrs) == 0 {
		return api.EndpointAddress{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	start := p.next[key] % len(addrs)
	p.next[key]++
	best, bestN := -1, cc
	for i := range addrs {
		j := (start + i) % len(addrs)
		if n := p.inflight[addrKey(addrs[j])]; n < bestN {
			best, bestN = j, n
		}
	}
	if best < 0 {
		return api.EndpointAddress{}, false
	}
	p.inflight[addrKey(addrs[best])]++
	return addrs[best], true
}

func (p *pool) release(key string, addr api.EndpointAddress) {
	ak := addrKey(addr)
	p.mu.Lock()
	if p.inflight[ak]--; p.inflight[ak] <= 0 {
		delete(p.inflight, ak)
	}
	p.mu.Unlock()
	p.wakeFirst(key)
}

// A turn is a step's place in the queue of the steps of one function that
// wait for a free slot. A freed slot or a change of the function's pods
// wakes the first; a step that then gets a slot wakes the next, so that N
// free slots wake N steps, never all of the thousands that may wait.
type turn chan struct{}

// join queues a waiting step at the end.
func (p *pool) join(key string) turn {
	t := make(turn, 1)
	p.mu.Lock()
	p.queues[key] = append(p.queues[key], t)
	p.mu.Unlock()
	return t
}

// leave takes a step out of the queue; a wake it had not used goes on to
// the next.
func (p *pool) leave(key string, t turn) {
	p.mu.Lock()
	q := p.queues[key]
	for i, w := range q {
		if w == t {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(p.queues, key)
	} else {
		p.queues[key] = q
	}
	p.mu.Unlock()
	select {
	case <-t:
		p.wakeFirst(key)
	default:
	}
}

// wakeFirst wakes the first step waiting for key, if any.
func (p *pool) wakeFirst(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.queues[key]; len(q) > 0 {
		select {
		case q[0] <- struct{}{}:
		default: // woken already
		}
	}
}

func (p *pool) first(key string, t turn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[key]
	return len(q) > 0 && q[0] == t
}

// await waits for the step's turn: a wake, or, first in line, the
// periodic look again (drops expire without an event). It fails with
// ErrTimeout at the deadline, or with ctx's error.
func (p *pool) await(ctx context.Context, key string, t turn, recheck *time.Ticker, deadline *time.Timer) error {
	for {
		select {
		case <-t:
			return nil
		case <-recheck.C:
			if p.first(key, t) {
				return nil
			}
		case <-deadline.C:
			return errdefs.ErrTimeout
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// drop leaves out an address that refused a call, until its Endpoints
// change or dropTTL passes.
func (p *pool) drop(key string, addr api.EndpointAddress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	d := p.drops[key]
	if d == nil {
		d = map[string]time.Time{}
		p.drops[key] = d
	}
	for a, at := range d {
		if now.Sub(at) >= dropTTL {
			delete(d, a)
		}
	}
	d[addrKey(addr)] = now
}

// forgetDrops is called when the Endpoints key change: they say anew which
// addresses are ready.
func (p *pool) forgetDrops(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.drops, key)
}

// readyAddresses are the ready addresses of an Endpoints object with their
// ports (the subset's first port when the address has none).
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

func addrKey(a api.EndpointAddress) string {
	return a.IP + ":" + strconv.Itoa(int(a.Port))
}

func funcNamespace(f *api.Func) string {
	if f.Namespace == "" {
		return api.DefaultNamespace
	}
	return f.Namespace
}
