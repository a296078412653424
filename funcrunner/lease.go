package funcrunner

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// leaseKeeper holds the runner's Lease: it announces the runner, its URL
// for synchronous calls and its demand report, and while it is renewed the
// runner's claims on instances hold.
type leaseKeeper struct {
	client   *client.Client
	identity string
	url      string
	// certSum pins the certificate of an https runner (else "").
	certSum  string
	demand   *demand
	interval time.Duration // how often changed demand is reported
	// backlog counts the unfinished instances the runner sees.
	backlog func() int

	lease      *api.Lease
	lastDemand string
}

func newLeaseKeeper(c *client.Client, identity, url, certSum string, d *demand, interval time.Duration, backlog func() int) *leaseKeeper {
	return &leaseKeeper{client: c, identity: identity, url: url, certSum: certSum, demand: d, interval: interval, backlog: backlog}
}

// annotate puts what the apiserver reaches the runner by on a Lease.
func (k *leaseKeeper) annotate(l *api.Lease) {
	l.Annotations[function.AnnotationRunnerURL] = k.url
	if k.certSum != "" {
		l.Annotations[function.AnnotationRunnerCert] = k.certSum
	}
}

// acquire creates the Lease; a Lease left by an earlier runner of the same
// identity is taken over.
func (k *leaseKeeper) acquire(ctx context.Context) error {
	now := api.NewMicroTime(time.Now().UTC())
	secs := int32(function.RunnerLeaseDuration / time.Second)
	id := k.identity
	l := &api.Lease{
		ObjectMeta: api.ObjectMeta{Name: function.RunnerLeaseName(id), Namespace: function.RunnerNamespace,
			Labels:      map[string]string{function.LabelComponent: function.ComponentRunner},
			Annotations: map[string]string{function.AnnotationDemand: "{}"}},
		Spec: api.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: now, RenewTime: now},
	}
	k.annotate(l)
	leases := k.client.Leases(function.RunnerNamespace)
	created, err := leases.Create(ctx, l)
	if errdefs.IsAlreadyExists(err) {
		cur, gerr := leases.Get(ctx, l.Name)
		if gerr != nil {
			return gerr
		}
		l.ResourceVersion = cur.ResourceVersion
		created, err = leases.Update(ctx, l)
	}
	if err != nil {
		return err
	}
	k.lease = created
	return nil
}

// run renews the Lease until ctx ends, reporting demand when it changes
// (at once when a function starts waiting for a pod), then deletes it so
// that other runners take over at once.
func (k *leaseKeeper) run(ctx context.Context) {
	renew := time.NewTicker(function.RunnerRenewInterval)
	defer renew.Stop()
	report := time.NewTicker(k.interval)
	defer report.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			if function.Abandoned(ctx) {
				return
			}
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if _, err := k.client.Leases(function.RunnerNamespace).Delete(dctx, k.lease.Name, client.DeleteOptions{UID: k.lease.UID}); err != nil && !errdefs.IsNotFound(err) {
				log.WithError(err).Warn("funcrunner: releasing the lease failed")
			}
			return
		case <-renew.C:
			force = true
		case <-report.C:
		case <-k.demand.urgent():
		}
		if err := k.update(ctx, force); err != nil && ctx.Err() == nil {
			log.WithError(err).Warn("funcrunner: renewing the lease failed")
		}
	}
}

// update writes the Lease when forced (a renewal) or when the demand changed.
func (k *leaseKeeper) update(ctx context.Context, force bool) error {
	snap := k.demand.snapshot()
	snap.Unfinished = k.backlog()
	data, _ := json.Marshal(snap)
	d := string(data)
	if !force && d == k.lastDemand {
		return nil
	}
	next := cache.DeepCopy(k.lease)
	now := api.NewMicroTime(time.Now().UTC())
	next.Spec.RenewTime = now
	next.Annotations[function.AnnotationDemand] = d
	k.annotate(next)
	leases := k.client.Leases(function.RunnerNamespace)
	updated, err := leases.Update(ctx, next)
	if errdefs.IsConflict(err) {
		// Our own last write may have landed though its answer failed (a
		// 503 once etcd had committed it): the Lease is then still ours,
		// at a newer version. Written again over that version it keeps
		// its acquireTime, so the controller goes on counting this
		// runner's calls where it was; a new acquireTime would make it
		// count every call of this runner again, and raise counters of
		// functions nobody calls.
		if cur, gerr := leases.Get(ctx, next.Name); gerr == nil && k.holds(cur) {
			next.ResourceVersion = cur.ResourceVersion
			updated, err = leases.Update(ctx, next)
		}
	}
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
		// Someone else wrote it (or removed it): take it back, as a new
		// incarnation whose started steps count from zero (the controller
		// counts a new incarnation's in full: those of the old one would
		// count twice).
		k.demand.recount()
		if aerr := k.acquire(ctx); aerr != nil {
			return aerr
		}
		return nil
	}
	if err != nil {
		return err
	}
	k.lease = updated
	k.lastDemand = d
	return nil
}

// members tells the live runners, from the Leases informer.
type members struct {
	self   string
	leases *cache.Informer[api.Lease, *api.Lease]
}

// live returns the identities of the runners whose Lease is held now; the
// runner itself is always among them.
func (m *members) live(now time.Time) map[string]bool {
	out := map[string]bool{m.self: true}
	for _, l := range m.leases.Lister().List(nil) {
		if l.Namespace != function.RunnerNamespace || l.Labels[function.LabelComponent] != function.ComponentRunner {
			continue
		}
		if function.LeaseLive(l, now) {
			out[*l.Spec.HolderIdentity] = true
		}
	}
	return out
}

// isLive says whether a runner's claims hold now.
func (m *members) isLive(identity string, now time.Time) bool {
	if identity == m.self {
		return true
	}
	l, ok := m.leases.Lister().Get(function.RunnerNamespace, function.RunnerLeaseName(identity))
	return ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == identity && function.LeaseLive(l, now)
}

// preferred picks, by rendezvous hashing, the live runner that should claim
// an instance, so that runners spread instances without talking.
func preferred(live map[string]bool, instance string) string {
	best, bestScore := "", uint64(0)
	for id := range live {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write([]byte(instance))
		if s := h.Sum64(); best == "" || s > bestScore || (s == bestScore && id < best) {
			best, bestScore = id, s
		}
	}
	return best
}

// holds says whether cur is this runner's Lease as it acquired it: its
// identity, since the same acquireTime.
func (k *leaseKeeper) holds(cur *api.Lease) bool {
	mine, at := cur.Spec.HolderIdentity, cur.Spec.AcquireTime
	return mine != nil && *mine == k.identity && at != nil && k.lease.Spec.AcquireTime != nil &&
		at.Time.Equal(k.lease.Spec.AcquireTime.Time)
}
