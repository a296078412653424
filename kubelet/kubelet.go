// Package kubelet is the node agent of minik8s: it registers its node and
// keeps it alive, runs the pods bound to it on containerd (one worker per
// pod, in kubelet/pod), adopts its containers after a restart and removes
// those whose pods are gone, and serves container logs over HTTP.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet/ingress"
	"minik8s/kubelet/logs"
	"minik8s/kubelet/network"
	"minik8s/kubelet/pod"
	"minik8s/kubelet/proxy"
	"minik8s/kubelet/stats"
	"minik8s/kubelet/volume"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/clusterdns"
	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/wait"
)

// Config configures a kubelet.
type Config struct {
	// APIServer is the apiserver's URL (used when Client is nil).
	APIServer string
	Client    *client.Client
	// Token is the node join token (DATA/node-token of the server): with
	// it the kubelet gets credentials of its own on its first start.
	Token string
	// ServingCert and ServingKey (PEM), when set, make the kubelet's
	// server HTTPS, taking only clients with a certificate of ClientCA
	// (the apiserver's); a joining kubelet gets them with its credentials.
	ServingCert, ServingKey, ClientCA []byte
	// CAData is the cluster CA (PEM) written into every pod's service
	// account volume as ca.crt; when empty the kubelet asks the apiserver
	// for it (GET /cacerts).
	CAData   []byte
	NodeName string
	// NodeIP is the node's address: the kubelet's HTTP server listens on
	// it, other nodes route this node's pods through it (with
	// PodNetworkHost, pods listen on it). By default the address of the
	// link of the default route (127.0.0.1 with PodNetworkHost, where
	// several kubelets on one machine take 127.0.0.11, 127.0.0.12, ...).
	NodeIP            string
	ContainerdAddress string
	// RootDir holds the pods' dirs (logs, volumes).
	RootDir string
	// StorageDir is where the node keeps the local-path provisioner's
	// volumes (RootDir/storage by default), published on its Node
	// (api.AnnotationLocalPathDir) for the provisioner; the kubelet
	// removes only directories in it.
	StorageDir string
	// Port of the kubelet's HTTP server on NodeIP; 0 picks a free one.
	Port int
	// HeartbeatPeriod is how often the node's Ready condition is renewed.
	HeartbeatPeriod time.Duration
	// BackoffBase and BackoffMax bound restart and pull back-offs.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// PullTimeout bounds one image pull.
	PullTimeout time.Duration
	// LogMaxBytes is the size at which a container's log rotates.
	LogMaxBytes int64
	// StatsPeriod is how often the node's and its containers' CPU and
	// memory are read (default 10s); CPU use is a rate over it.
	StatsPeriod time.Duration
	// ContainerLogger is the path of minik8s-logger, which keeps each line
	// of container output with its time (kubectl logs --since,
	// --timestamps); default: the one beside this program, else on PATH.
	// Without one, output is kept as written, without times.
	ContainerLogger string
	// PortMin and PortMax bound the ports allocated to containers.
	PortMin, PortMax int32
	// PodNetwork is how pods are networked: PodNetworkCNI gives each its
	// own namespace and an address of the node's spec.podCIDR through the
	// CNI plugins in CNIBinDir (the default); PodNetworkHost runs pods on
	// the node's network with allocated ports.
	PodNetwork string
	CNIBinDir  string
	// ServiceCIDR is the cluster's range of cluster IPs (the apiserver's
	// --service-cidr, api.DefaultServiceCIDR by default): with PodNetworkCNI the node routes it out of its
	// address's link, so that connections made on the node reach the DNAT
	// rules of the Services.
	ServiceCIDR string
	// ClusterCIDR is the cluster's pod range (the apiserver's
	// --cluster-cidr, api.DefaultClusterCIDR by default): with
	// PodNetworkCNI, pods' connections beyond it are masqueraded.
	ClusterCIDR string
	// ClusterDomain is the cluster's DNS domain (cluster.local): with
	// PodNetworkCNI the kubelet serves the cluster's names to its pods at
	// their gateway, and their resolv.conf searches it.
	ClusterDomain string
	// ResolvConf is the node's resolver configuration (/etc/resolv.conf):
	// the cluster DNS forwards other names to its nameservers.
	ResolvConf string
	// IngressHTTPPort and IngressHTTPSPort are where the node serves the
	// cluster's Ingresses, on NodeIP (the flags default to 80 and 443);
	// 0 serves none.
	IngressHTTPPort, IngressHTTPSPort int
}

// The ways pods are networked (Config.PodNetwork).
const (
	PodNetworkHost = "host"
	PodNetworkCNI  = "cni"
)

func (c *Config) setDefaults() error {
	var err error
	if c.PodNetwork, err = PodNetworkOf(c.PodNetwork); err != nil {
		return err
	}
	// The node's own address: loopback where pods share its network,
	// else one other nodes can route its pods through.
	given := c.NodeIP
	if c.NodeIP == "" {
		c.NodeIP = "127.0.0.1"
		if c.PodNetwork == PodNetworkCNI {
			ip, err := network.DefaultAddress()
			if err != nil {
				return errdefs.Invalid("node-ip", "none given, and none found: %v", err)
			}
			c.NodeIP = ip
		}
	}
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		c.NodeName = strings.ToLower(h)
		// Extra nodes on one machine differ by address, so their default
		// names must too: host-127-0-0-12, host-10-98-0-2.
		if given != "" && given != "127.0.0.1" {
			c.NodeName += "-" + strings.ReplaceAll(c.NodeIP, ".", "-")
		}
	}
	if net.ParseIP(c.NodeIP) == nil {
		return errdefs.Invalid("node-ip", "%q is not an IP address", c.NodeIP)
	}
	if c.APIServer == "" {
		c.APIServer = client.ServerFromEnv()
	}
	if c.ContainerdAddress == "" {
		return errdefs.Invalid("containerd-address", "a containerd socket is required")
	}
	if !strings.Contains(c.ContainerdAddress, "://") {
		// gRPC takes a relative socket path for an authority.
		abs, err := filepath.Abs(c.ContainerdAddress)
		if err != nil {
			return err
		}
		c.ContainerdAddress = abs
	}
	if c.RootDir == "" {
		c.RootDir = filepath.Join("data", "kubelet", c.NodeName)
	}
	abs, err := filepath.Abs(c.RootDir)
	if err != nil {
		return err
	}
	c.RootDir = abs
	if c.StorageDir == "" {
		c.StorageDir = filepath.Join(c.RootDir, "storage")
	}
	if c.StorageDir, err = filepath.Abs(c.StorageDir); err != nil {
		return err
	}
	if c.HeartbeatPeriod <= 0 {
		c.HeartbeatPeriod = 5 * time.Second
	}
	if c.LogMaxBytes <= 0 {
		c.LogMaxBytes = logs.DefaultMaxBytes
	}
	if c.StatsPeriod <= 0 {
		c.StatsPeriod = 10 * time.Second
	}
	if c.ContainerLogger == "" {
		c.ContainerLogger = findLogger()
	} else if st, err := os.Stat(c.ContainerLogger); err != nil || st.IsDir() {
		return errdefs.Invalid("container-logger", "%q is not a program: %v", c.ContainerLogger, err)
	}
	if c.CNIBinDir == "" {
		c.CNIBinDir = network.DefaultBinDir
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = clusterdns.DefaultDomain
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.PodNetwork == PodNetworkCNI {
		if c.ServiceCIDR == "" {
			c.ServiceCIDR = api.DefaultServiceCIDR
		}
		if c.ClusterCIDR == "" {
			c.ClusterCIDR = api.DefaultClusterCIDR
		}
		if _, _, err := net.ParseCIDR(c.ClusterCIDR); err != nil {
			return errdefs.Invalid("cluster-cidr", "%q is not a CIDR range", c.ClusterCIDR)
		}
		if _, _, err := net.ParseCIDR(c.ServiceCIDR); err != nil {
			return errdefs.Invalid("service-cidr", "%q is not a CIDR range", c.ServiceCIDR)
		}
	}
	return nil
}

// Kubelet is a running node agent.
type Kubelet struct {
	cfg     Config
	client  *client.Client
	rt      *containerd.Runtime
	podCfg  *pod.Config
	network *network.Manager // nil: pods run on the node's network
	ports   *pod.Ports
	port    int
	apiImpl *apiAdapter
	stats   *stats.Sampler

	mu      sync.Mutex
	workers map[string]*pod.Worker // by pod uid
	byName  map[string]string      // namespace/name -> uid
	wg      sync.WaitGroup
}

// Run runs a kubelet until ctx ends. Its containers keep running after it
// stops; the next kubelet of the same node adopts them.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(cfg.RootDir, "pods"), 0o755); err != nil {
		return fmt.Errorf("root dir: %w", err)
	}
	if cfg.ContainerLogger == "" {
		log.Warnf("kubelet: no %s beside this program or on PATH: container output is kept without times (kubectl logs --since and --timestamps are refused)", LoggerName)
	}
	rt, err := containerd.New(ctx, cfg.ContainerdAddress, containerd.Options{PullTimeout: cfg.PullTimeout, Logger: cfg.ContainerLogger})
	if err != nil {
		return err
	}
	defer rt.Close()
	c := cfg.Client
	switch {
	case c == nil && cfg.Token != "":
		if c, err = joinClient(ctx, &cfg); err != nil {
			return err
		}
	case c == nil:
		c = client.New(cfg.APIServer)
	}
	recorder := events.New(c, "kubelet", cfg.NodeName)
	go recorder.Run(ctx)
	k := &Kubelet{
		cfg: cfg, client: c, rt: rt,
		podCfg: &pod.Config{NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, RootDir: cfg.RootDir,
			BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax, Events: recorder, Allocatable: nodeCapacity()},
		ports:   pod.NewPorts(cfg.NodeIP, cfg.PortMin, cfg.PortMax),
		apiImpl: &apiAdapter{c: c, caData: cfg.CAData},
		workers: map[string]*pod.Worker{},
		byName:  map[string]string{},
		stats:   stats.New(rt),
	}
	l, err := net.Listen("tcp", net.JoinHostPort(cfg.NodeIP, strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("kubelet listen on %s:%d: %w", cfg.NodeIP, cfg.Port, err)
	}
	k.port = l.Addr().(*net.TCPAddr).Port
	if l, err = k.secure(l); err != nil {
		return err
	}
	srv := &http.Server{Handler: k.handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("kubelet http server")
		}
	}()
	defer srv.Close()
	log.WithFields(log.Fields{"node": cfg.NodeName, "ip": cfg.NodeIP, "port": k.port, "containerd": cfg.ContainerdAddress}).Info("kubelet starting")

	if err := k.register(ctx); err != nil {
		return err
	}
	if cfg.PodNetwork == PodNetworkCNI {
		if k.network, err = k.podNetwork(ctx); err != nil {
			return err
		}
		k.podCfg.Network = k.network
		gw := k.network.Gateway().String()
		k.podCfg.DNS = pod.DNSConfig{Server: gw, Domain: cfg.ClusterDomain}
		dnsServer, err := clusterdns.New(cache.NewFactory(c), clusterdns.Config{Address: net.JoinHostPort(gw, "53"),
			Domain: cfg.ClusterDomain, Upstreams: clusterdns.UpstreamsFromResolvConf(cfg.ResolvConf)})
		if err != nil {
			return err
		}
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			if err := dnsServer.Run(ctx); err != nil {
				log.WithError(err).Error("cluster dns stopped")
			}
		}()
		k.wg.Add(1)
		go func() { defer k.wg.Done(); k.keepRoutes(ctx) }()
		k.wg.Add(1)
		go func() { defer k.wg.Done(); k.keepPolicies(ctx) }()
	}
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.heartbeat(ctx) }()
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.sampleStats(ctx) }()
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.reclaimVolumes(ctx) }()
	k.wg.Add(1)
	go func() { defer k.wg.Done(); rt.Events(ctx, k.onTaskEvent) }()
	// Every node serves the cluster IPs of all Services: in the kernel
	// when pods have their own network, else by a proxy on the node's.
	factory := cache.NewFactory(c)
	var services interface{ Run(context.Context) error } = proxy.New(factory)
	if k.network != nil {
		masq, err := network.MasqueradeAddress(k.network.PodCIDR())
		if err != nil {
			return err
		}
		if services, err = proxy.NewKernel(factory, k.network.PodCIDR(), k.cfg.ClusterCIDR, masq.String()); err != nil {
			return err
		}
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		if err := services.Run(ctx); err != nil {
			log.WithError(err).Error("service proxy stopped")
		}
	}()
	if cfg.IngressHTTPPort > 0 || cfg.IngressHTTPSPort > 0 {
		ing, err := ingress.New(c, factory, ingress.Config{Address: cfg.NodeIP, HTTPPort: cfg.IngressHTTPPort, HTTPSPort: cfg.IngressHTTPSPort})
		if err != nil {
			return err
		}
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			if err := ing.Run(ctx); err != nil {
				log.WithError(err).Error("ingress controller stopped")
			}
		}()
	}

	rv, err := k.adopt(ctx)
	if err != nil {
		k.wg.Wait()
		return err
	}
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.housekeeping(ctx) }()
	k.watchPods(ctx, rv)
	k.wg.Wait()
	log.WithField("node", cfg.NodeName).Info("kubelet stopped")
	return nil
}

func (k *Kubelet) podSelector() client.ListOptions {
	return client.ListOptions{FieldSelector: "spec.nodeName=" + k.cfg.NodeName}
}

// adopt lists this node's pods and containers once: workers take over the
// containers of existing pods; containers of pods that are gone are removed.
func (k *Kubelet) adopt(ctx context.Context) (string, error) {
	var pods []*api.Pod
	var rv string
	for {
		var err error
		pods, rv, err = k.client.Pods("").AllNamespaces().List(ctx, k.podSelector())
		if err == nil {
			break
		}
		log.WithError(err).Warn("listing this node's pods; retrying")
		if !wait.Sleep(ctx, time.Second) {
			return "", ctx.Err()
		}
	}
	containers, err := k.rt.ListContainers(ctx, map[string]string{containerd.LabelNode: k.cfg.NodeName})
	if err != nil {
		return "", err
	}
	byUID := map[string][]containerd.Container{}
	for _, c := range containers {
		byUID[c.Labels[containerd.LabelPodUID]] = append(byUID[c.Labels[containerd.LabelPodUID]], c)
	}
	for _, p := range pods {
		k.startWorker(ctx, p, byUID[p.UID])
		delete(byUID, p.UID)
	}
	k.tearDownOrphanNetworks(ctx, pods)
	for uid, cs := range byUID {
		for _, c := range cs {
			log.WithFields(log.Fields{"id": c.ID, "pod": c.Labels[containerd.LabelPodNamespace] + "/" + c.Labels[containerd.LabelPodName], "uid": uid}).
				Info("removing container of a pod that is gone")
			if err := k.rt.RemoveContainer(ctx, c.ID); err != nil {
				log.WithError(err).Warn("removing orphan container")
			}
		}
		k.removePodDir(uid)
	}
	return rv, nil
}

func (k *Kubelet) removePodDir(uid string) {
	if uid == "" {
		return
	}
	if err := volume.RemovePodDir(pod.Dir(k.cfg.RootDir, uid)); err != nil {
		log.WithError(err).Warn("removing pod dir")
	}
}

func (k *Kubelet) startWorker(ctx context.Context, p *api.Pod, adopted []containerd.Container) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.workers[p.UID]; ok {
		return
	}
	w := pod.NewWorker(k.podCfg, k.rt, k.apiImpl, k.ports, p, adopted)
	k.workers[p.UID] = w
	k.byName[p.Namespace+"/"+p.Name] = p.UID
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		w.Run(ctx)
		select {
		case <-w.Finished():
			k.mu.Lock()
			delete(k.workers, p.UID)
			if k.byName[p.Namespace+"/"+p.Name] == p.UID {
				delete(k.byName, p.Namespace+"/"+p.Name)
			}
			k.mu.Unlock()
		default:
		}
	}()
}

// watchPods follows the pods bound to this node from version rv.
func (k *Kubelet) watchPods(ctx context.Context, rv string) {
	opts := k.podSelector()
	opts.ResourceVersion = rv
	for ev := range k.client.Pods("").AllNamespaces().Watch(ctx, opts) {
		p := ev.Object
		k.mu.Lock()
		w := k.workers[p.UID]
		k.mu.Unlock()
		switch ev.Type {
		case api.Added, api.Modified:
			if w != nil {
				w.Update(p)
			} else {
				k.startWorker(ctx, p, nil)
			}
		case api.Deleted:
			if w != nil {
				w.Gone()
			}
		}
	}
}

// onTaskEvent pokes the worker of the pod whose container exited.
func (k *Kubelet) onTaskEvent(ev containerd.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := k.rt.ContainerStatus(ctx, ev.ContainerID)
	if err != nil || st.Labels[containerd.LabelNode] != k.cfg.NodeName {
		return
	}
	k.mu.Lock()
	w := k.workers[st.Labels[containerd.LabelPodUID]]
	k.mu.Unlock()
	if w != nil {
		w.Poke()
	}
}

// housekeeping rotates logs and removes containers (and pod dirs) that
// belong to no pod of this node.
func (k *Kubelet) housekeeping(ctx context.Context) {
	rotate := time.NewTicker(5 * time.Second)
	defer rotate.Stop()
	sweep := time.NewTicker(30 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-rotate.C:
			k.rotateLogs()
		case <-sweep.C:
			k.sweep(ctx)
		}
	}
}

func (k *Kubelet) rotateLogs() {
	files, _ := filepath.Glob(filepath.Join(k.cfg.RootDir, "pods", "*", "logs", "*.log"))
	for _, f := range files {
		if err := logs.Rotate(f, k.cfg.LogMaxBytes); err != nil {
			log.WithError(err).WithField("file", f).Warn("rotating log")
		}
	}
}

func (k *Kubelet) sweep(ctx context.Context) {
	// Read what exists before which workers exist: a worker always exists
	// before its containers and dir, so nothing of a live pod is taken.
	dirs, _ := os.ReadDir(filepath.Join(k.cfg.RootDir, "pods"))
	containers, err := k.rt.ListContainers(ctx, map[string]string{containerd.LabelNode: k.cfg.NodeName})
	if err != nil {
		log.WithError(err).Warn("listing containers")
		return
	}
	k.mu.Lock()
	known := make(map[string]bool, len(k.workers))
	for uid := range k.workers {
		known[uid] = true
	}
	k.mu.Unlock()
	for _, c := range containers {
		if uid := c.Labels[containerd.LabelPodUID]; !known[uid] {
			log.WithFields(log.Fields{"id": c.ID, "uid": uid}).Info("removing container of a pod that is gone")
			if err := k.rt.RemoveContainer(ctx, c.ID); err != nil {
				log.WithError(err).Warn("removing orphan container")
			}
		}
	}
	for _, d := range dirs {
		if !known[d.Name()] {
			k.removePodDir(d.Name())
		}
	}
}

// PodNetworkOf checks a --pod-network value; "" is the default, cni.
func PodNetworkOf(v string) (string, error) {
	switch v {
	case "":
		return PodNetworkCNI, nil
	case PodNetworkHost, PodNetworkCNI:
		return v, nil
	}
	return "", errdefs.Invalid("pod-network", "%q is neither %q nor %q", v, PodNetworkCNI, PodNetworkHost)
}

// LoggerName is the container logger's program (cmd/minik8s-logger).
const LoggerName = "minik8s-logger"

// findLogger finds the container logger beside this program, else on
// PATH; "" when there is none.
func findLogger() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), LoggerName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath(LoggerName); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}
