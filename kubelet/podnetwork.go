package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet/network"
	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
)

// NetworkStateDir, under the kubelet's root, keeps its pod networks' state
// (network.Config.StateDir).
const NetworkStateDir = "network"

// podNetwork is the node's pod network over the slice of the cluster's pod
// range the apiserver gave the node when it registered.
func (k *Kubelet) podNetwork(ctx context.Context) (*network.Manager, error) {
	n, err := k.client.Nodes().Get(ctx, k.cfg.NodeName)
	if err != nil {
		return nil, err
	}
	if n.Spec.PodCIDR == "" {
		return nil, fmt.Errorf("node %s has no spec.podCIDR: the apiserver gives one when a node registers (is its --cluster-cidr set?)", k.cfg.NodeName)
	}
	m, err := network.New(network.Config{BinDir: k.cfg.CNIBinDir, StateDir: filepath.Join(k.cfg.RootDir, NetworkStateDir),
		PodCIDR: n.Spec.PodCIDR, ClusterCIDR: k.cfg.ClusterCIDR})
	if err != nil {
		return nil, err
	}
	// The node routes between its pods, other nodes and node ports from
	// the moment it is up, not only once the bridge plugin has run for a
	// first pod (which turns forwarding on too).
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return nil, fmt.Errorf("turning on IPv4 forwarding: %w", err)
	}
	log.WithFields(log.Fields{"node": k.cfg.NodeName, "podCIDR": n.Spec.PodCIDR}).Info("pods get their own network")
	return m, nil
}

// tearDownOrphanNetworks removes the namespaces and addresses of pods that
// were deleted while no kubelet ran.
func (k *Kubelet) tearDownOrphanNetworks(ctx context.Context, pods []*api.Pod) {
	if k.network == nil {
		return
	}
	uids, err := k.network.Pods()
	if err != nil {
		log.WithError(err).Warn("listing the pods' networks")
		return
	}
	live := map[string]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	for _, uid := range uids {
		if live[uid] {
			continue
		}
		log.WithField("uid", uid).Info("tearing down the network of a pod that is gone")
		if err := k.network.TearDown(ctx, network.Pod{UID: uid}); err != nil {
			log.WithError(err).WithField("uid", uid).Warn("tearing down an orphan pod network")
		}
	}
}

// keepRoutes keeps a route to every other node's pod CIDR via its address
// (host-gw) until ctx ends: node events only mark the routes stale; each
// pass computes them all from the informer's nodes.
func (k *Kubelet) keepRoutes(ctx context.Context) {
	routes, err := network.NewRoutes()
	if err != nil {
		log.WithError(err).Error("routes to other nodes' pods: none will be made")
		return
	}
	defer routes.Close()
	stale := make(chan struct{}, 1)
	mark := func(*api.Node) {
		select {
		case stale <- struct{}{}:
		default:
		}
	}
	inf := cache.NewInformer[api.Node](k.client.Nodes())
	inf.AddEventHandler(cache.Handler[*api.Node]{OnAdd: mark, OnUpdate: func(_, n *api.Node) { mark(n) }, OnDelete: mark})
	inf.Start(ctx)
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stale:
		case <-retry.C:
		}
		if !inf.HasSynced() {
			retry.Reset(100 * time.Millisecond)
			continue
		}
		want := routesTo(k.cfg.NodeName, inf.Lister().List(nil))
		want[k.cfg.ServiceCIDR] = k.cfg.NodeIP
		if err := routes.Sync(want); err != nil {
			log.WithError(err).Warn("routes to other nodes' pods; trying again in 10s")
			retry.Reset(10 * time.Second)
		}
	}
}

// routesTo is a route (pod CIDR → node address) for every node but self
// that has both.
func routesTo(self string, nodes []*api.Node) map[string]string {
	want := map[string]string{}
	for _, n := range nodes {
		if n.Name == self || n.Spec.PodCIDR == "" {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == api.NodeInternalIP && a.Address != "" {
				want[n.Spec.PodCIDR] = a.Address
				break
			}
		}
	}
	return want
}
