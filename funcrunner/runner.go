package funcrunner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/funcrunner/trigger"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/function"
	"minik8s/pkg/pki"
	"minik8s/pkg/tracing"
	"minik8s/pkg/wait"
)

// instanceWorkers is how many instances are synced (claimed) at once;
// driving them runs in goroutines of their own.
const instanceWorkers = 4

// unfinished selects the instances a runner has work on.
const unfinished = "status.phase!=" + api.InstanceSucceeded + ",status.phase!=" + api.InstanceFailed

// Runner is one function runner.
type Runner struct {
	cfg Config
	// calls is set once the runner serves: it holds its Lease and its
	// caches have synced.
	calls atomic.Pointer[syncCalls]
}

// New returns a runner; Run runs it.
func New(cfg Config) *Runner {
	cfg.setDefaults()
	if cfg.Identity == "" {
		cfg.Identity = defaultIdentity()
	}
	return &Runner{cfg: cfg}
}

// Identity is the runner's name in its Lease and in status.runner.
func (r *Runner) Identity() string { return r.cfg.Identity }

// Call runs a synchronous call in this process, as a call handed over by
// HTTP runs: the apiserver of an all-in-one cluster (cluster/) hands its
// calls to the runner next to it this way, saving a hop. The instance
// returned has ended unless wait ran out first; function.ErrNotServing
// while the runner does not serve.
func (r *Runner) Call(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error) {
	sc := r.calls.Load()
	if sc == nil {
		return nil, fmt.Errorf("function runner %s: %w", r.cfg.Identity, function.ErrNotServing)
	}
	return sc.call(ctx, req)
}

// Run runs a runner until ctx ends: it holds its Lease, drives the
// instances it claims and serves the synchronous calls handed to it.
func Run(ctx context.Context, cfg Config) error {
	return New(cfg).Run(ctx)
}

// Run runs the runner until ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Client == nil {
		return errors.New("funcrunner: no apiserver client")
	}
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return fmt.Errorf("funcrunner: listen on %s: %w", cfg.Address, err)
	}
	defer ln.Close()
	c := cfg.Client
	scheme, certSum := "http", ""
	if ca := c.CA(); len(ca) > 0 {
		if ln, certSum, err = secureListener(ln, ca); err != nil {
			return err
		}
		scheme = "https"
	}
	url := cfg.AdvertiseURL
	if url == "" {
		url = scheme + "://" + ln.Addr().String()
	}

	f := cache.NewFactory(c)
	funcs, pods, eps, leases := f.Funcs(), f.Pods(), f.Endpoints(), f.Leases()
	triggers := f.Triggers()
	guard, err := newEgressGuard(cfg, c.Server(), clusterAddresses{nodes: f.Nodes().Lister(), services: f.Services().Lister(),
		eps: eps.Lister(), leases: leases.Lister()})
	if err != nil {
		return err
	}
	refs := trigger.Refs{Apps: f.Apps().Lister()}
	firer := trigger.NewSchedules(cfg.Identity, c, triggers, refs)
	workers := []func(context.Context){firer.Run}
	var q *trigger.Queues
	if cfg.NATSURL != "" {
		q, err = trigger.NewQueues(cfg.Identity, c, triggers, refs, cfg.NATSURL)
		if err != nil {
			return err
		}
		workers = append(workers, q.Run)
	}
	var gw *trigger.Gateway
	var gwListener net.Listener
	if cfg.GatewayAddress != "" {
		if gwListener, err = net.Listen("tcp", cfg.GatewayAddress); err != nil {
			return fmt.Errorf("funcrunner: the function gateway on %s: %w", cfg.GatewayAddress, err)
		}
		defer gwListener.Close()
		gw = trigger.NewGateway(cfg.Identity, c, triggers, refs, r.Call)
	}
	instInf := cache.NewInformer[api.FuncInstance](c.FuncInstances("").AllNamespaces(),
		cache.WithListOptions(client.ListOptions{FieldSelector: unfinished}))
	if q != nil {
		instInf.AddEventHandler(cache.Handler[*api.FuncInstance]{OnDelete: func(o *api.FuncInstance) { q.Ended(cache.Key(o)) }})
	}
	d := newDemand()
	st := newStepper(cfg, c, funcs, pods, eps, d)
	st.revs = f.FuncRevisions().Lister()
	if st.exporter, err = tracing.NewExporter(ctx, cfg.OTLPEndpoint); err != nil {
		return err
	}
	workers = append(workers, st.exporter.Run)
	cb := newCallbacks(guard)
	st.outputs = &outputs{client: c, self: cfg.Identity, posts: cb}
	if q != nil {
		st.outputs.nats = q
	}
	in := newInstances(c, cfg.Identity, instInf, &members{self: cfg.Identity, leases: leases}, st, cb)
	in.maxBytes = cfg.MaxInstanceBytes
	keeper := newLeaseKeeper(c, cfg.Identity, url, certSum, d, cfg.DemandInterval, instInf.Lister().Len)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.Start(ctx)
	instInf.Start(ctx)
	if !f.WaitForSync(ctx) || !cache.WaitForSync(ctx, instInf) {
		return ctx.Err()
	}
	for {
		err := keeper.acquire(ctx)
		if err == nil {
			break
		}
		log.WithError(err).Warn("funcrunner: taking the lease failed, retrying")
		wait.Sleep(ctx, time.Second)
		if ctx.Err() != nil {
			return nil
		}
	}

	in.ctx = ctx
	sc := &syncCalls{self: cfg.Identity, stepper: st, instances: in, ctx: ctx}
	r.calls.Store(sc)
	defer r.calls.Store(nil)
	mux := http.NewServeMux()
	mux.Handle(function.RunnerCallPath+"/", sc)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("/metrics", st.metrics)
	hs := &http.Server{Handler: pki.OnlyAPIServer("a function runner", mux), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()

	if gw != nil {
		go func() {
			if err := gw.Serve(ctx, gwListener); err != nil {
				errc <- fmt.Errorf("function gateway: %w", err)
			}
		}()
	}
	workers = append(workers, keeper.run, func(ctx context.Context) { in.run(ctx, instanceWorkers) })
	done := make(chan struct{}, len(workers))
	for _, w := range workers {
		go func() { w(ctx); done <- struct{}{} }()
	}
	log.WithFields(log.Fields{"identity": cfg.Identity, "url": url}).Info("function runner serving")

	var serveErr error
	select {
	case serveErr = <-errc:
		cancel(serveErr)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = hs.Shutdown(sctx)
	for range workers {
		<-done
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("funcrunner: %w", serveErr)
	}
	return nil
}

// defaultIdentity is the host's name and a random suffix: unique per
// process, so a restarted runner does not pass for the old one.
func defaultIdentity() string {
	h, err := os.Hostname()
	h = strings.ToLower(h)
	if err != nil || h == "" || strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		h = "runner"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return h + "-" + hex.EncodeToString(b)
}
