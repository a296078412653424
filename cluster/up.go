// Package cluster runs a whole minik8s in one process (`minik8s up`): the
// apiserver on embedded etcd, the scheduler, the controller manager and one
// kubelet, on a containerd of its own that it starts, installing what a
// fresh Debian machine lacks and building the images it needs.
package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver"
	"minik8s/controller"
	"minik8s/funcrunner"
	"minik8s/kubelet"
	"minik8s/pkg/client"
	"minik8s/pkg/queue"
	"minik8s/pkg/rbac"
	"minik8s/scheduler"
)

// Up runs the cluster until ctx ends, then stops every component.
func Up(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	address := cfg.ContainerdAddress
	if address == "" {
		d, err := startContainerd(ctx, cfg.DataDir)
		if err != nil {
			return err
		}
		defer stopContainerd(d, cfg.DataDir)
		address = d.Address
	}
	if err := prepareHost(ctx, cfg, address); err != nil {
		return err
	}
	clients, err := componentClients(cfg)
	if err != nil {
		return err
	}
	natsURL := cfg.NATSURL
	if natsURL == "" && cfg.NATSPort != 0 {
		ns, err := queue.Start(cfg.NATSAddress, cfg.NATSPort, filepath.Join(cfg.DataDir, "nats"))
		if err != nil {
			return err
		}
		defer ns.Close()
		natsURL = ns.URL
		log.WithField("url", natsURL).Info("nats serving the queue triggers")
	}
	return runComponents(ctx, cancel, cfg, clients, address, natsURL)
}

// runComponents runs the apiserver, then, once it is healthy, the other
// components, until ctx ends or one of them fails (which cancels ctx).
func runComponents(ctx context.Context, cancel context.CancelFunc, cfg Config, clients *clients, address, natsURL string) error {
	acfg := apiserverConfig(cfg)
	runners := funcRunners(cfg, clients.runner, natsURL)
	if len(runners) > 0 {
		// The apiserver hands its synchronous calls to the runner next to
		// it without an HTTP hop.
		acfg.LocalRunner = runners[0]
	}
	var wg sync.WaitGroup
	errc := make(chan error, 5+cfg.FuncRunners)
	run := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	run("apiserver", func(ctx context.Context) error { return apiserver.Run(ctx, acfg) })
	if err := waitHealthy(ctx, clients.admin); err != nil {
		cancel()
		wg.Wait()
		return firstError(errc, err)
	}
	run("controller manager", func(ctx context.Context) error {
		return controller.Run(ctx, controller.Config{Client: clients.controllers,
			FuncScaleInterval: cfg.FuncScaleInterval, FuncIdleWindow: cfg.FuncIdleWindow, FuncInstanceBudget: cfg.FuncInstanceBudget,
			WarmPoolSize: cfg.WarmPoolSize, StorageDir: storageDir(cfg)})
	})
	run("scheduler", func(ctx context.Context) error {
		return scheduler.Run(ctx, scheduler.Config{Client: clients.scheduler, Policy: cfg.SchedulerPolicy})
	})
	for _, r := range runners {
		run("function runner", r.Run)
	}
	run("kubelet", func(ctx context.Context) error {
		return kubelet.Run(ctx, kubelet.Config{Client: clients.kubelet, ServingCert: clients.servingCert, ServingKey: clients.servingKey,
			ClientCA: clients.ca, CAData: clients.ca, NodeName: cfg.NodeName, NodeIP: cfg.NodeIP,
			PodNetwork: cfg.PodNetwork, ServiceCIDR: cfg.ServiceCIDR, ClusterCIDR: cfg.ClusterCIDR,
			ContainerdAddress: address, RootDir: filepath.Join(cfg.DataDir, "kubelet", cfg.NodeName), StorageDir: storageDir(cfg),
			IngressHTTPPort: cfg.IngressHTTPPort, IngressHTTPSPort: cfg.IngressHTTPSPort})
	})
	log.WithFields(upFields(cfg, clients)).Info("minik8s is up; try: bin/mkctl get nodes (Ctrl-C stops it)")
	<-ctx.Done()
	wg.Wait()
	return firstError(errc, nil)
}

// storageDir is where the cluster's node keeps its local-path volumes:
// in the data dir, as k3s keeps them in its own, so two clusters on one
// machine share none.
func storageDir(cfg Config) string { return filepath.Join(cfg.DataDir, "storage") }

// apiserverConfig is the in-process apiserver's configuration.
func apiserverConfig(cfg Config) apiserver.Config {
	acfg := apiserver.Config{DataDir: cfg.DataDir, TLSSANs: cfg.TLSSANs, TokenAuthFile: cfg.TokenAuthFile,
		ServiceCIDR: cfg.ServiceCIDR, ClusterCIDR: cfg.ClusterCIDR, NodeCIDRMaskSize: cfg.NodeCIDRMaskSize, ServiceNodePortRange: cfg.ServiceNodePortRange,
		MaxPendingCalls: cfg.MaxPendingCalls, MaxPendingCallBytes: cfg.MaxPendingCallBytes, EtcdQuotaBytes: cfg.EtcdQuotaBytes,
		FuncInstanceTTL: cfg.FuncInstanceTTL, OTLPEndpoint: cfg.OTLPEndpoint, EgressAllowCIDRs: cfg.EgressAllowCIDRs}
	if cfg.Port != 0 {
		acfg.Address = net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port))
	}
	if cfg.SecurePort != 0 {
		acfg.SecureAddress = net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort))
		// Pods reach the API (the kubernetes Service) at the node's
		// address, which a port bound on every address serves.
		if ip := net.ParseIP(cfg.BindAddress); ip == nil || ip.IsUnspecified() {
			acfg.AdvertiseAddress = cfg.NodeIP
		}
	}
	return acfg
}

// funcRunners are the in-process function runners.
func funcRunners(cfg Config, c *client.Client, natsURL string) []*funcrunner.Runner {
	var runners []*funcrunner.Runner
	for i := range cfg.FuncRunners {
		rc := funcrunner.Config{Client: c, Identity: fmt.Sprintf("%s-%d", cfg.NodeName, i+1), NATSURL: natsURL, OTLPEndpoint: cfg.OTLPEndpoint,
			EgressAllow: cfg.EgressAllowCIDRs, ClusterCIDR: cfg.ClusterCIDR, ServiceCIDR: cfg.ServiceCIDR}
		if i == 0 && cfg.GatewayPort != 0 {
			// The first runner serves the HTTP triggers.
			rc.GatewayAddress = net.JoinHostPort(cfg.GatewayAddress, strconv.Itoa(cfg.GatewayPort))
		}
		runners = append(runners, funcrunner.New(rc))
	}
	return runners
}

// upFields tell where the cluster is reached, once it is up.
func upFields(cfg Config, clients *clients) log.Fields {
	fields := log.Fields{"apiserver": clients.admin.Server(), "node": cfg.NodeName, "nodeIP": cfg.NodeIP}
	if cfg.SecurePort != 0 {
		fields["kubeconfig"] = filepath.Join(cfg.DataDir, apiserver.AdminKubeconfig)
		fields["dashboard"] = fmt.Sprintf("https://127.0.0.1:%d/ui/", cfg.SecurePort)
	}
	if cfg.IngressHTTPPort != 0 {
		fields["ingress"] = "http://" + net.JoinHostPort(cfg.NodeIP, strconv.Itoa(cfg.IngressHTTPPort)) + "/"
	}
	if cfg.Port != 0 {
		// No sign-in on the local port.
		fields["dashboard"] = "http://" + net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)) + "/ui/"
	}
	return fields
}

// clients are the in-process components' clients: on the secure port each
// with a certificate of its own identity (as k3s gives its components), so
// that the roles bound to them are what they may do; on the local port
// when the secure one is off.
type clients struct {
	admin, controllers, scheduler, runner, kubelet *client.Client
	// The kubelet's serving certificate and the CA (secure port only).
	servingCert, servingKey, ca []byte
}

func componentClients(cfg Config) (*clients, error) {
	if cfg.SecurePort == 0 {
		c := client.New("http://" + net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)))
		return &clients{admin: c, controllers: c, scheduler: c, runner: c, kubelet: c}, nil
	}
	server := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.SecurePort))
	issue := func(user string, groups ...string) (*client.Client, error) {
		cc, err := apiserver.ClientConfigFor(cfg.DataDir, server, user, groups...)
		if err != nil {
			return nil, err
		}
		return client.NewForConfig(cc)
	}
	var out clients
	var err error
	if out.servingCert, out.servingKey, out.ca, err = apiserver.KubeletServingFor(cfg.DataDir, cfg.NodeName, net.ParseIP(cfg.NodeIP)); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		into   **client.Client
		user   string
		groups []string
	}{
		{&out.admin, "system:admin", []string{rbac.Masters}},
		{&out.controllers, rbac.ControllerManagerUser, nil},
		{&out.scheduler, rbac.SchedulerUser, nil},
		{&out.runner, "system:funcrunner:" + cfg.NodeName, []string{rbac.FuncRunnersGroup}},
		{&out.kubelet, rbac.NodeUserPrefix + cfg.NodeName, []string{rbac.NodesGroup}},
	} {
		if *c.into, err = issue(c.user, c.groups...); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

func firstError(errc chan error, fallback error) error {
	select {
	case err := <-errc:
		return err
	default:
		return fallback
	}
}

func waitHealthy(ctx context.Context, c *client.Client) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Healthy(hctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("apiserver not healthy after 60s: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
