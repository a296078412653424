package framework

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/kubelet"
	"minik8s/pkg/client"
	"minik8s/pkg/rbac"

	"minik8s/test/containerdtest"
	"minik8s/test/harness"
)

// Kubelet is a kubelet running in the test process.
type Kubelet struct {
	t      testing.TB
	Config kubelet.Config
	// mu keeps Start and Stop from racing an abnormal end's teardown.
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

// StartKubelet runs a kubelet for node name on ip (a loopback address such
// as 127.0.0.11) against the apiserver at apiURL and the containerd ctd,
// with short back-offs; it stops (leaving its containers) when the test
// ends. Its root dir lives in a temp dir kept across Restart.
func StartKubelet(t testing.TB, apiURL string, ctd *containerdtest.Containerd, name, ip string) *Kubelet {
	t.Helper()
	return startKubelet(t, apiURL, ctd, name, ip)
}

// SecureKubelet is StartKubelet for a node of the secure port of s with
// credentials issued from the cluster CA in s's data dir, as minik8s up
// issues its own node's: user system:node:NAME in system:nodes, and a
// serving certificate for ip. (A node joining with the node token is not
// given one for a loopback address such as ip: see TestJoinRejoinRenew and
// TestMinik8sUpBinaries for the join.)
// configure, if given, changes the kubelet's config before it starts.
func SecureKubelet(t testing.TB, s *APIServer, ctd *containerdtest.Containerd, name, ip string, configure ...func(*kubelet.Config)) *Kubelet {
	t.Helper()
	cc, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, rbac.NodeUserPrefix+name, rbac.NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewForConfig(cc)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, ca, err := apiserver.KubeletServingFor(s.DataDir, name, net.ParseIP(ip))
	if err != nil {
		t.Fatal(err)
	}
	return startKubelet(t, s.SecureURL, ctd, name, ip, append([]func(*kubelet.Config){func(cfg *kubelet.Config) {
		cfg.Client, cfg.ServingCert, cfg.ServingKey, cfg.ClientCA, cfg.CAData = c, cert, key, ca, ca
	}}, configure...)...)
}

func startKubelet(t testing.TB, apiURL string, ctd *containerdtest.Containerd, name, ip string, configure ...func(*kubelet.Config)) *Kubelet {
	t.Helper()
	k := &Kubelet{t: t, Config: kubelet.Config{
		APIServer:         apiURL,
		NodeName:          name,
		NodeIP:            ip,
		ContainerdAddress: ctd.Address,
		RootDir:           filepath.Join(t.TempDir(), "kubelet"),
		HeartbeatPeriod:   2 * time.Second,
		BackoffBase:       time.Second,
		BackoffMax:        5 * time.Second,
		PullTimeout:       20 * time.Second,
		// In-process kubelets share the test's network: their pods run
		// on it (StartNetKubelet gives pods their own).
		PodNetwork:      kubelet.PodNetworkHost,
		ContainerLogger: harness.GoBinary(t, kubelet.LoggerName),
		StatsPeriod:     time.Second,
	}}
	for _, c := range configure {
		c(&k.Config)
	}
	k.Start()
	harness.Track(t, "kubelet "+name, k.stop)
	return k
}

// Start runs the kubelet (again).
func (k *Kubelet) Start() {
	harness.HoldIfAborting()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel != nil {
		k.t.Fatalf("kubelet %s already running", k.Config.NodeName)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	k.done = make(chan error, 1)
	cfg := k.Config
	go func() { k.done <- kubelet.Run(ctx, cfg) }()
}

// Stop stops the kubelet as a kill would: its containers keep running.
func (k *Kubelet) Stop() { k.stop(k.t.Errorf) }

func (k *Kubelet) stop(errorf func(string, ...any)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel == nil {
		return
	}
	k.cancel()
	select {
	case err := <-k.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			errorf("kubelet %s stopped with error: %v", k.Config.NodeName, err)
		}
	case <-time.After(60 * time.Second):
		errorf("kubelet %s did not stop within 60s", k.Config.NodeName)
	}
	k.cancel = nil
}

// Restart stops and starts the kubelet on the same root dir.
func (k *Kubelet) Restart() {
	k.Stop()
	k.Start()
}
