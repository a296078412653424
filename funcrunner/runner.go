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
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/function"
)

// instanceWorkers is how many instances are synced (claimed) at once;
// driving them runs in goroutines of their own.
const instanceWorkers = 4

// unfinished selects the instances a runner has work on.
const unfinished = "status.phase!=" + api.InstanceSucceeded + ",status.phase!=" + api.InstanceFailed

// ErrAbandoned, as the cause of Run's context (context.WithCancelCause),
// stops a runner as a crash would: it leaves its Lease and its claims for
// the other runners to find expired. Tests use it to stand for SIGKILL.
var ErrAbandoned = errors.New("funcrunner abandoned")

func abandoned(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrAbandoned) }

// Run runs a runner until ctx ends: it holds its Lease, drives the
// instances it claims and serves the synchronous calls handed to it.
func Run(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if cfg.Client == nil {
		return errors.New("funcrunner: no apiserver client")
	}
	if cfg.Identity == "" {
		cfg.Identity = defaultIdentity()
	}
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return fmt.Errorf("funcrunner: listen on %s: %w", cfg.Address, err)
	}
	defer ln.Close()
	url := cfg.AdvertiseURL
	if url == "" {
		url = "http://" + ln.Addr().String()
	}
	c := cfg.Client

	f := cache.NewFactory(c)
	funcs, pods, eps, leases := f.Funcs(), f.Pods(), f.Endpoints(), f.Leases()
	instInf := cache.NewInformer[api.FuncInstance](c.FuncInstances("").AllNamespaces(),
		cache.WithListOptions(client.ListOptions{FieldSelector: unfinished}))
	d := newDemand()
	st := newStepper(cfg, c, funcs, pods, eps, d)
	in := newInstances(c, cfg.Identity, instInf, &members{self: cfg.Identity, leases: leases}, st, newCallbacks())
	keeper := newLeaseKeeper(c, cfg.Identity, url, d, cfg.DemandInterval)

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
		sleep(ctx, time.Second)
		if ctx.Err() != nil {
			return nil
		}
	}

	in.ctx = ctx
	mux := http.NewServeMux()
	mux.Handle(function.RunnerCallPath+"/", &syncCalls{self: cfg.Identity, stepper: st, instances: in, ctx: ctx})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	done := make(chan struct{}, 2)
	go func() { keeper.run(ctx); done <- struct{}{} }()
	go func() { in.run(ctx, instanceWorkers); done <- struct{}{} }()
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
	<-done
	<-done
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
