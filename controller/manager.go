// Package controller is the controller manager: it runs the level-triggered
// controllers of minik8s (ReplicaSets, node lifecycle, Endpoints, garbage
// collection, functions, the retention of call records) over one set of
// shared informers.
//
// A controller is added by writing its package (New registering event
// handlers on the shared informers; Run working a queue) and one entry in
// Controllers.
package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/controller/cronjob"
	"minik8s/controller/daemonset"
	"minik8s/controller/deployment"
	"minik8s/controller/disruption"
	"minik8s/controller/endpoints"
	"minik8s/controller/funcinstancegc"
	"minik8s/controller/functions"
	"minik8s/controller/garbagecollector"
	"minik8s/controller/ingressstatus"
	"minik8s/controller/job"
	"minik8s/controller/namespace"
	"minik8s/controller/nodelifecycle"
	"minik8s/controller/podautoscaler"
	"minik8s/controller/replicaset"
	"minik8s/controller/resourcequota"
	"minik8s/controller/statefulset"
	"minik8s/controller/volume"
	"minik8s/controller/warmpool"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
)

// Config configures the controller manager.
type Config struct {
	// APIServer is the apiserver's URL (used when Client is nil).
	APIServer string
	Client    *client.Client
	// NodeMonitorGracePeriod is how long a node may go without a heartbeat
	// before it is marked not ready and its pods are moved (default 20s).
	NodeMonitorGracePeriod time.Duration
	// Workers per controller (default 4).
	Workers int
	// Controllers to run, by name; empty runs them all.
	Controllers []string
	// FuncScaleInterval and FuncIdleWindow drive functions' scale to zero:
	// every interval, a function idle longer than the window loses one
	// from its counter (defaults 10s and 60s).
	FuncScaleInterval time.Duration
	FuncIdleWindow    time.Duration
	// HPASyncPeriod is how often every HorizontalPodAutoscaler is looked
	// at (default 15s).
	HPASyncPeriod time.Duration
	// FuncInstanceBudget is how many finished call records (FuncInstances)
	// are kept across the cluster; older ones are deleted (default 10000).
	FuncInstanceBudget int
	// WarmPoolSize is how many warm generic function pods are kept per
	// runtime, namespace with Python functions and node (0: none; the
	// commands default to warmpool.DefaultSize).
	WarmPoolSize int
	// StorageDir is where nodes keep the local-path provisioner's volumes
	// unless a node's kubelet says (default localpath.DefaultStorageDir).
	StorageDir string
}

// Context is what a controller is built from.
type Context struct {
	Client    *client.Client
	Informers *cache.Factory
	Config    Config
	// Events records the controllers' events.
	Events *events.Recorder
}

// Runner is a built controller.
type Runner interface {
	Run(ctx context.Context, workers int)
}

// Controllers are what the manager runs, in this order.
var Controllers = []struct {
	Name string
	New  func(*Context) Runner
}{
	{replicaset.Name, func(c *Context) Runner { return replicaset.New(c.Client, c.Informers, c.Events) }},
	{deployment.Name, func(c *Context) Runner { return deployment.New(c.Client, c.Informers, c.Events) }},
	{daemonset.Name, func(c *Context) Runner { return daemonset.New(c.Client, c.Informers, c.Events) }},
	{statefulset.Name, func(c *Context) Runner { return statefulset.New(c.Client, c.Informers, c.Events) }},
	{resourcequota.Name, func(c *Context) Runner { return resourcequota.New(c.Client, c.Informers) }},
	{job.Name, func(c *Context) Runner { return job.New(c.Client, c.Informers, c.Events) }},
	{cronjob.Name, func(c *Context) Runner { return cronjob.New(c.Client, c.Informers, c.Events) }},
	{podautoscaler.Name, func(c *Context) Runner {
		return podautoscaler.New(c.Client, c.Informers, c.Events, c.Config.HPASyncPeriod)
	}},
	{nodelifecycle.Name, func(c *Context) Runner {
		return nodelifecycle.New(c.Client, c.Informers, c.Config.NodeMonitorGracePeriod)
	}},
	{endpoints.Name, func(c *Context) Runner { return endpoints.New(c.Client, c.Informers) }},
	{ingressstatus.Name, func(c *Context) Runner { return ingressstatus.New(c.Client, c.Informers) }},
	{disruption.Name, func(c *Context) Runner { return disruption.New(c.Client, c.Informers) }},
	{volume.Name, func(c *Context) Runner { return volume.New(c.Client, c.Informers, c.Config.StorageDir) }},
	{garbagecollector.Name, func(c *Context) Runner { return garbagecollector.New(c.Client, c.Informers) }},
	{namespace.Name, func(c *Context) Runner { return namespace.New(c.Client, c.Informers) }},
	{functions.Name, func(c *Context) Runner {
		return functions.New(c.Client, c.Informers,
			functions.Config{ScaleInterval: c.Config.FuncScaleInterval, IdleWindow: c.Config.FuncIdleWindow, Events: c.Events})
	}},
	{warmpool.Name, func(c *Context) Runner { return warmpool.New(c.Client, c.Informers, c.Config.WarmPoolSize) }},
	// Its own informer, of slimmed instances: it waits for it in Run.
	{funcinstancegc.Name, func(c *Context) Runner { return funcinstancegc.New(c.Client, c.Config.FuncInstanceBudget) }},
}

// Run runs the controllers until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	c := cfg.Client
	if c == nil {
		if cfg.APIServer == "" {
			return errdefs.Invalid("apiserver", "the apiserver URL is required")
		}
		c = client.New(cfg.APIServer)
	}
	if cfg.NodeMonitorGracePeriod <= 0 {
		cfg.NodeMonitorGracePeriod = nodelifecycle.DefaultGracePeriod
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	enabled := map[string]bool{}
	for _, n := range cfg.Controllers {
		enabled[n] = true
	}
	for n := range enabled {
		if !known(n) {
			return errdefs.Invalid("controllers", "unknown controller %q", n)
		}
	}
	cctx := &Context{Client: c, Informers: cache.NewFactory(c), Config: cfg, Events: events.New(c, "controller-manager", "")}
	go cctx.Events.Run(ctx)
	type built struct {
		name string
		r    Runner
	}
	var runners []built
	for _, ctl := range Controllers {
		if len(enabled) == 0 || enabled[ctl.Name] {
			runners = append(runners, built{ctl.Name, ctl.New(cctx)})
		}
	}
	cctx.Informers.Start(ctx)
	log.WithFields(log.Fields{"apiserver": c.Server(), "controllers": len(runners),
		"nodeMonitorGracePeriod": cfg.NodeMonitorGracePeriod.String()}).Info("controller manager starting")
	if !cctx.Informers.WaitForSync(ctx) {
		return nil
	}
	var wg sync.WaitGroup
	for _, b := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.WithField("controller", b.name).Info("controller started")
			b.r.Run(ctx, cfg.Workers)
		}()
	}
	wg.Wait()
	log.Info("controller manager stopped")
	return nil
}

func known(name string) bool {
	for _, c := range Controllers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// Names lists the controllers, for flags and errors.
func Names() string {
	names := make([]string, len(Controllers))
	for i, c := range Controllers {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}
