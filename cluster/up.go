// Package cluster runs a whole minik8s in one process (`minik8s up`): the
// apiserver on embedded etcd, the scheduler, the controller manager and one
// kubelet, on a containerd of its own that it starts, installing what a
// fresh Debian machine lacks and building the images it needs.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	shimapi "github.com/containerd/containerd/api/runtime/task/v2"
	"github.com/containerd/ttrpc"
	log "github.com/sirupsen/logrus"

	"minik8s/apiserver"
	"minik8s/apiserver/alloc"
	"minik8s/controller"
	"minik8s/funcrunner"
	"minik8s/images"
	"minik8s/kubelet"
	"minik8s/kubelet/network"
	"minik8s/pkg/client"
	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/queue"
	"minik8s/pkg/rbac"
	"minik8s/scheduler"
)

// Config configures `minik8s up`.
type Config struct {
	// Port is the local port (plain HTTP on Address, a loopback address,
	// acting as the admin; 0: off).
	Address string
	Port    int
	// SecurePort (TLS, authenticated) binds BindAddress (default
	// 0.0.0.0); 0 turns it off.
	SecurePort  int
	BindAddress string
	// GatewayPort (0: none) is the function gateway's, on GatewayAddress
	// (default 127.0.0.1), served by the first function runner.
	GatewayPort    int
	GatewayAddress string
	// NATSPort (0: none) is the embedded NATS server's (with JetStream,
	// its streams under DataDir/nats), on NATSAddress (default
	// 127.0.0.1); NATSURL names an existing NATS instead.
	NATSPort    int
	NATSAddress string
	NATSURL     string
	// OTLPEndpoint: see funcrunner.Config.
	OTLPEndpoint string
	// TLSSANs and TokenAuthFile: see apiserver.Config.
	TLSSANs       []string
	TokenAuthFile string
	DataDir       string
	// NodeIP and NodeName of the one kubelet. NodeIP is by default the
	// address of the default route's link (127.0.0.1 with
	// PodNetwork host).
	NodeIP   string
	NodeName string
	// PodNetwork is how the kubelet networks pods (kubelet.PodNetworkCNI
	// by default, or kubelet.PodNetworkHost).
	PodNetwork string
	// ContainerdAddress of a running containerd; empty starts a private one
	// under DataDir.
	ContainerdAddress string
	SchedulerPolicy   string
	// FuncScaleInterval and FuncIdleWindow: see the function controller.
	FuncScaleInterval time.Duration
	FuncIdleWindow    time.Duration
	// FuncInstanceBudget is how many finished call records are kept
	// (funcinstancegc.DefaultBudget).
	FuncInstanceBudget int
	// FuncRunners is how many function runners run in this process; 0
	// leaves function calls to runners started apart (bin/funcrunner).
	FuncRunners int
	// SkipImages leaves the images alone (they are built when missing).
	SkipImages bool
	// ServiceCIDR is the range of the Services' cluster IPs
	// (apiserver.DefaultServiceCIDR; apiserver.HostNetworkServiceCIDR with
	// PodNetwork host, where two clusters on one machine need different
	// ranges, since every node's proxy listens on the cluster IPs).
	ServiceCIDR string
	// ClusterCIDR and NodeCIDRMaskSize: the pod range and the size of a
	// node's slice of it (see apiserver.Config).
	ClusterCIDR string
	// ServiceNodePortRange: where node ports come from.
	ServiceNodePortRange string
	NodeCIDRMaskSize     int
	// EgressAllowCIDRs: the ranges callbacks may reach although they
	// trust the platform (see funcrunner.Config.EgressAllow), given to the
	// apiserver and the runners alike. Empty by default.
	EgressAllowCIDRs []netip.Prefix
	// MaxPendingCalls, MaxPendingCallBytes, EtcdQuotaBytes and
	// FuncInstanceTTL: see apiserver.Config.
	MaxPendingCalls     int
	MaxPendingCallBytes int64
	EtcdQuotaBytes      int64
	FuncInstanceTTL     time.Duration
}

func (c *Config) setDefaults() error {
	if c.Address == "" {
		c.Address = "127.0.0.1"
	}
	if c.BindAddress == "" {
		c.BindAddress = "0.0.0.0"
	}
	if c.GatewayAddress == "" {
		c.GatewayAddress = "127.0.0.1"
	}
	if c.NATSAddress == "" {
		c.NATSAddress = "127.0.0.1"
	}
	if c.Port == 0 && c.SecurePort == 0 {
		return errdefs.Invalid("secure-port", "the secure port and the local port are both off: nothing could reach the cluster")
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return err
	}
	c.DataDir = abs
	if c.PodNetwork, err = kubelet.PodNetworkOf(c.PodNetwork); err != nil {
		return err
	}
	if c.NodeIP == "" {
		c.NodeIP = "127.0.0.1"
		if c.PodNetwork == kubelet.PodNetworkCNI {
			if c.NodeIP, err = network.DefaultAddress(); err != nil {
				return errdefs.Invalid("node-ip", "none given, and none found: %v", err)
			}
		}
	}
	if c.NodeName == "" {
		c.NodeName = defaultNodeName()
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = apiserver.DefaultServiceCIDR
		if c.PodNetwork == kubelet.PodNetworkHost {
			c.ServiceCIDR = apiserver.HostNetworkServiceCIDR
		}
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = apiserver.DefaultClusterCIDR
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = apiserver.DefaultNodeCIDRMaskSize
	}
	// A bad range fails before containerd and the images are set up.
	if _, err = alloc.ParseServiceCIDR(c.ServiceCIDR); err != nil {
		return err
	}
	_, err = alloc.ParseClusterCIDR(c.ClusterCIDR, c.NodeCIDRMaskSize)
	return err
}

// defaultNodeName is the host's name when it is a valid node name.
func defaultNodeName() string {
	h, err := os.Hostname()
	h = strings.ToLower(h)
	if err != nil || h == "" || strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" {
		return "node-1"
	}
	return h
}

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
		defer func() {
			// The pods stay in etcd: the next `minik8s up` starts them again.
			removeContainers(d.Address)
			releasePodNetworks(cfg.DataDir)
			log.Info("stopping containerd")
			d.Stop()
			drainContainers(cfg.DataDir)
		}()
		address = d.Address
	}
	if cfg.PodNetwork == kubelet.PodNetworkCNI {
		if err := ensureNetworkTools(ctx); err != nil {
			return err
		}
	}
	if !cfg.SkipImages {
		if err := ensureImages(ctx, address); err != nil {
			return err
		}
	}

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
	clients, err := componentClients(cfg)
	if err != nil {
		return err
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
	var runners []*funcrunner.Runner
	for i := range cfg.FuncRunners {
		rc := funcrunner.Config{Client: clients.runner, Identity: fmt.Sprintf("%s-%d", cfg.NodeName, i+1), NATSURL: natsURL, OTLPEndpoint: cfg.OTLPEndpoint,
			EgressAllow: cfg.EgressAllowCIDRs, ClusterCIDR: cfg.ClusterCIDR, ServiceCIDR: cfg.ServiceCIDR}
		if i == 0 && cfg.GatewayPort != 0 {
			// The first runner serves the HTTP triggers.
			rc.GatewayAddress = net.JoinHostPort(cfg.GatewayAddress, strconv.Itoa(cfg.GatewayPort))
		}
		runners = append(runners, funcrunner.New(rc))
	}
	if len(runners) > 0 {
		// The apiserver hands its synchronous calls to the runner next to
		// it without an HTTP hop.
		acfg.LocalRunner = runners[0]
	}
	run("apiserver", func(ctx context.Context) error { return apiserver.Run(ctx, acfg) })
	if err := waitHealthy(ctx, clients.admin); err != nil {
		cancel()
		wg.Wait()
		return firstError(errc, err)
	}
	run("controller manager", func(ctx context.Context) error {
		return controller.Run(ctx, controller.Config{Client: clients.controllers,
			FuncScaleInterval: cfg.FuncScaleInterval, FuncIdleWindow: cfg.FuncIdleWindow, FuncInstanceBudget: cfg.FuncInstanceBudget})
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
			ContainerdAddress: address, RootDir: filepath.Join(cfg.DataDir, "kubelet", cfg.NodeName)})
	})
	fields := log.Fields{"apiserver": clients.admin.Server(), "node": cfg.NodeName, "nodeIP": cfg.NodeIP}
	if cfg.SecurePort != 0 {
		fields["kubeconfig"] = filepath.Join(cfg.DataDir, apiserver.AdminKubeconfig)
		fields["dashboard"] = fmt.Sprintf("https://127.0.0.1:%d/ui/", cfg.SecurePort)
	}
	if cfg.Port != 0 {
		// No sign-in on the local port.
		fields["dashboard"] = "http://" + net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)) + "/ui/"
	}
	log.WithFields(fields).Info("minik8s is up; try: bin/mkctl get nodes (Ctrl-C stops it)")
	<-ctx.Done()
	wg.Wait()
	return firstError(errc, nil)
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

// startContainerd installs containerd and runc when missing, then starts a
// containerd private to this cluster under dataDir.
func startContainerd(ctx context.Context, dataDir string) (*containerd.Daemon, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("running containers needs root: run `minik8s up` as root, or give --containerd-address of a containerd you can use")
	}
	var missing []string
	if _, err := os.Stat(containerd.Binary); err != nil {
		missing = append(missing, "containerd")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc")
	}
	if len(missing) > 0 {
		if err := aptInstall(ctx, missing...); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(dataDir, "containerd")
	address := filepath.Join(dir, "containerd.sock")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dataDir, "containerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	log.WithFields(log.Fields{"socket": address, "log": logf.Name()}).Info("starting a private containerd")
	d, err := containerd.Start(ctx, dir, address, logf)
	if err != nil {
		return nil, fmt.Errorf("%w (see %s)", err, logf.Name())
	}
	return d, nil
}

// removeContainers stops and removes every container of the private
// containerd, so that nothing of the cluster runs once it is stopped.
func removeContainers(address string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := containerd.New(ctx, address, containerd.Options{})
	if err != nil {
		log.WithError(err).Warn("cannot reach containerd to stop the containers")
		return
	}
	defer rt.Close()
	cs, err := rt.ListContainers(ctx, nil)
	if err != nil {
		log.WithError(err).Warn("listing containers to stop them")
		return
	}
	if len(cs) > 0 {
		log.WithField("containers", len(cs)).Info("stopping the pods' containers")
	}
	for _, c := range cs {
		if err := rt.RemoveContainer(ctx, c.ID); err != nil {
			log.WithError(err).WithField("container", c.ID).Warn("removing container")
		}
	}
}

// releasePodNetworks tears down the pod networks of every kubelet whose
// root is under dataDir (this node's and, by default, the extra nodes'
// of the README), once their containers are gone: no pod namespace or
// address outlives `minik8s up`.
func releasePodNetworks(dataDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dirs, _ := filepath.Glob(filepath.Join(dataDir, "kubelet", "*", kubelet.NetworkStateDir))
	for _, dir := range dirs {
		if err := network.ReleaseAll(ctx, dir, ""); err != nil {
			log.WithError(err).WithField("dir", dir).Warn("releasing the pods' networks")
		}
	}
}

// drainContainers removes the containers that outlived containerd. The
// kubelets of extra nodes share this containerd (see the README) and
// restart the containers removeContainers took from them for as long as
// containerd answers; the ones they start before it stops keep running
// under their shims once it is gone. A containerd on the same dir but on a
// socket no kubelet knows takes them back (it reconnects to live shims)
// and removes them, with nobody able to start more.
func drainContainers(dataDir string) {
	dir := filepath.Join(dataDir, "containerd")
	tasks, _ := filepath.Glob(filepath.Join(dir, "state", "io.containerd.runtime.v2.task", "*", "*"))
	if len(tasks) == 0 {
		return
	}
	// Read now: containerd removes the bundles of the shims it stops.
	bundles := make([]taskBundle, 0, len(tasks))
	for _, t := range tasks {
		bundles = append(bundles, readBundle(t))
	}
	// Last, once the drain is over and the shims are gone.
	defer func() {
		for _, b := range bundles {
			removeAbortedCreate(b)
		}
	}()
	log.WithField("containers", len(tasks)).Info("removing the containers other nodes started while containerd stopped")
	logf, err := os.OpenFile(filepath.Join(dataDir, "containerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		log.WithError(err).Warn("cannot remove the containers left")
		return
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := containerd.Start(ctx, dir, filepath.Join(dir, "drain.sock"), logf)
	if err != nil {
		log.WithError(err).Warn("cannot remove the containers left")
		return
	}
	removeContainers(d.Address)
	// What is left is shims whose container was never created: containerd
	// stopped in the middle of starting it. containerd 1.6 keeps such a
	// shim (1.7 shuts it down on restart, containerd#6860), and its runc
	// create was killed midway (see removeAbortedCreate).
	idle, _ := filepath.Glob(filepath.Join(dir, "state", "io.containerd.runtime.v2.task", "*", "*"))
	for _, b := range idle {
		shutdownIdleShim(ctx, b)
	}
	d.Stop()
}

// shutdownIdleShim stops the shim of a task bundle when it runs no
// process; containerd then removes the bundle.
func shutdownIdleShim(ctx context.Context, bundle string) {
	id := filepath.Base(bundle)
	logger := log.WithField("container", id)
	addr, err := os.ReadFile(filepath.Join(bundle, "address"))
	if err != nil {
		logger.WithError(err).Warn("shim left without its address")
		return
	}
	conn, err := net.DialTimeout("unix", strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://"), 5*time.Second)
	if err != nil {
		return // gone already
	}
	c := ttrpc.NewClient(conn)
	defer c.Close()
	shim := shimapi.NewTaskClient(c)
	if pids, err := shim.Pids(ctx, &shimapi.PidsRequest{ID: id}); err == nil && len(pids.Processes) > 0 {
		logger.WithField("pids", len(pids.Processes)).Warn("a container outlived containerd")
		return
	}
	logger.Info("stopping a shim without container")
	// The shim exits before it answers: the error says nothing.
	_, _ = shim.Shutdown(ctx, &shimapi.ShutdownRequest{ID: id, Now: true})
}

// ensureNetworkTools installs what the kubelet gives pods their own network
// with when missing: the CNI plugins and iptables (the Services' rules, and
// ebtables-nft for the pods' anti-spoofing rules).
func ensureNetworkTools(ctx context.Context) error {
	var missing []string
	if _, err := os.Stat(filepath.Join(network.DefaultBinDir, "bridge")); err != nil {
		missing = append(missing, "containernetworking-plugins")
	}
	for _, bin := range []string{"iptables-restore", "ebtables-nft-restore"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, "iptables")
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return aptInstall(ctx, missing...)
}

// aptInstall installs Debian packages, saying so.
func aptInstall(ctx context.Context, pkgs ...string) error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s missing and no apt-get to install them: install them with your package manager", strings.Join(pkgs, ", "))
	}
	log.WithField("packages", strings.Join(pkgs, " ")).Info("installing missing packages from Debian's repositories (apt-get)")
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq"}, pkgs...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, tail(out))
		}
	}
	return nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// ensureImages builds and imports the runtime image when the node's
// containerd does not have it, and the example of a function in another
// language: it shares the runtime's root filesystem, so it costs a layer of
// a few kilobytes once the runtime is there.
func ensureImages(ctx context.Context, address string) error {
	rt, err := containerd.New(ctx, address, containerd.Options{})
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := ensureRuntimeImage(ctx, rt); err != nil {
		return err
	}
	if err := ensureImage(ctx, rt, images.PerlExample()); err != nil {
		// Only an example: the cluster runs without it.
		log.WithError(err).WithField("image", images.PerlExampleName).Warn("example image not imported; 'make images' builds it")
	}
	return nil
}

func ensureRuntimeImage(ctx context.Context, rt *containerd.Runtime) error {
	if ok, err := rt.HasImage(ctx, images.PythonRuntimeName); err != nil || ok {
		return err
	}
	funcserver, err := siblingBinary("funcserver")
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if err := aptInstall(ctx, "debootstrap"); err != nil {
			return err
		}
	}
	log.WithField("image", images.PythonRuntimeName).Info("building the function runtime image from Debian's packages (debootstrap; cached for next time, a few minutes the first time)")
	return ensureImage(ctx, rt, images.FunctionRuntime(funcserver))
}

// ensureImage builds spec (from the cache when it can) and imports it,
// unless the node has it.
func ensureImage(ctx context.Context, rt *containerd.Runtime, spec images.Spec) error {
	if ok, err := rt.HasImage(ctx, spec.Name); err != nil || ok {
		return err
	}
	b := images.Builder{CacheDir: images.DefaultCacheDir}
	path, err := b.Build(ctx, spec)
	if err != nil {
		return fmt.Errorf("building %s: %w", spec.Name, err)
	}
	if _, err := images.ImportFile(ctx, rt, path); err != nil {
		return fmt.Errorf("importing %s: %w", path, err)
	}
	log.WithField("image", spec.Name).Info("image imported")
	return nil
}

// siblingBinary finds another minik8s binary next to this one (bin/).
func siblingBinary(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not next to %s: build it first (make build): %w", name, self, err)
	}
	return p, nil
}
