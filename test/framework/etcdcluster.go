package framework

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"minik8s/test/harness"
)

// EtcdCluster is a real etcd cluster of several members in this process,
// on loopback ports, standing in for the external etcd an apiserver is
// given with --etcd-endpoints.
type EtcdCluster struct {
	Endpoints []string
	members   []*embed.Etcd
	mu        sync.Mutex
	stopped   []bool
}

// StartEtcdCluster starts an n-member cluster, stopped when the test ends.
func StartEtcdCluster(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	base := t.TempDir()
	free := func() url.URL {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return url.URL{Scheme: "http", Host: l.Addr().String()}
	}
	clients, peers, initial := make([]url.URL, n), make([]url.URL, n), make([]string, n)
	for i := range n {
		clients[i], peers[i] = free(), free()
		initial[i] = fmt.Sprintf("m%d=%s", i, peers[i].String())
	}
	c := &EtcdCluster{stopped: make([]bool, n)}
	starts := make([]*embed.Etcd, n)
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(base, cfg.Name)
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clients[i]}, []url.URL{clients[i]}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peers[i]}, []url.URL{peers[i]}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "minik8s-test-" + harness.RunToken()
		cfg.LogLevel = "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			t.Fatalf("etcd member %d: %v", i, err)
		}
		starts[i] = e
		c.Endpoints = append(c.Endpoints, clients[i].String())
	}
	c.members = starts
	t.Cleanup(func() {
		for i := range n {
			c.Stop(i)
		}
	})
	for i, e := range starts {
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(time.Minute):
			t.Fatalf("etcd member %d not ready after a minute", i)
		}
	}
	return c
}

// Stop stops member i, as a crash of its machine would for the others.
func (c *EtcdCluster) Stop(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped[i] {
		return
	}
	c.stopped[i] = true
	done := make(chan struct{})
	go func() { defer close(done); c.members[i].Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
}
