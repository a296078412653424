package kubelet

import (
	"context"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/netpol"
)

// keepPolicies enforces the NetworkPolicies of this node's pods until ctx
// ends: events of pods (any node's: they are the peers), namespaces and
// policies only mark the rules stale; each pass computes every pod's from
// the informers and the network writes those that changed.
func (k *Kubelet) keepPolicies(ctx context.Context) {
	f := cache.NewFactory(k.client)
	pods, namespaces, policies := f.Pods(), f.Namespaces(), f.NetworkPolicies()
	stale := make(chan struct{}, 1)
	mark := func() {
		select {
		case stale <- struct{}{}:
		default:
		}
	}
	pods.AddEventHandler(cache.Handler[*api.Pod]{OnAdd: func(*api.Pod) { mark() }, OnUpdate: func(old, p *api.Pod) {
		if peerChanged(old, p) {
			mark()
		}
	}, OnDelete: func(*api.Pod) { mark() }})
	namespaces.AddEventHandler(cache.Handler[*api.Namespace]{OnAdd: func(*api.Namespace) { mark() },
		OnUpdate: func(_, _ *api.Namespace) { mark() }, OnDelete: func(*api.Namespace) { mark() }})
	policies.AddEventHandler(cache.Handler[*api.NetworkPolicy]{OnAdd: func(*api.NetworkPolicy) { mark() },
		OnUpdate: func(_, _ *api.NetworkPolicy) { mark() }, OnDelete: func(*api.NetworkPolicy) { mark() }})
	f.Start(ctx)
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stale:
		case <-retry.C:
		}
		if !pods.HasSynced() || !namespaces.HasSynced() || !policies.HasSynced() {
			retry.Reset(100 * time.Millisecond)
			continue
		}
		c := netpol.Cluster{Pods: pods.Lister().List(nil), Namespaces: namespaces.Lister().List(nil), Policies: policies.Lister().List(nil)}
		if err := k.network.SetPolicies(ctx, k.policyRules(c)); err != nil {
			log.WithError(err).Warn("network policies; trying again in 5s")
			retry.Reset(5 * time.Second)
		}
	}
}

// policyRules are the rules of this node's pods with their own network.
// Pods on the node's network are not subject to policies, as in
// Kubernetes.
func (k *Kubelet) policyRules(c netpol.Cluster) map[string]netpol.Rules {
	rules := map[string]netpol.Rules{}
	for _, p := range c.Pods {
		if p.Spec.NodeName != k.cfg.NodeName || p.Spec.HostNetwork {
			continue
		}
		rules[p.UID] = netpol.For(p, c)
	}
	return rules
}

// peerChanged tells whether an update changes what policies see of a pod:
// its labels, addresses, node, phase or named ports.
func peerChanged(old, p *api.Pod) bool {
	if old.Spec.NodeName != p.Spec.NodeName || old.Status.PodIP != p.Status.PodIP || len(old.Status.PodIPs) != len(p.Status.PodIPs) ||
		old.Status.Phase != p.Status.Phase || len(old.Labels) != len(p.Labels) {
		return true
	}
	for k, v := range p.Labels {
		if old.Labels[k] != v {
			return true
		}
	}
	return false
}
