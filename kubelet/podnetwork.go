package kubelet

import (
	"context"
	"fmt"
	"path/filepath"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet/network"
	"minik8s/pkg/api"
)

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
	m, err := network.New(network.Config{BinDir: k.cfg.CNIBinDir, StateDir: filepath.Join(k.cfg.RootDir, "network"), PodCIDR: n.Spec.PodCIDR})
	if err != nil {
		return nil, err
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
