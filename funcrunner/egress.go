package funcrunner

import (
	"fmt"
	"net/netip"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/egress"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// clusterAddresses are what the runner's caches know of the addresses
// that trust the platform, read at each check of its egress guard: the
// nodes' addresses and pod ranges, the Services' cluster IPs, the
// apiserver's endpoints and the other runners' addresses.
type clusterAddresses struct {
	nodes    *cache.Lister[api.Node, *api.Node]
	services *cache.Lister[api.Service, *api.Service]
	eps      *cache.Lister[api.Endpoints, *api.Endpoints]
	leases   *cache.Lister[api.Lease, *api.Lease]
}

// newEgressGuard is the guard of every request the runner makes to a
// caller's URL (callbacks): besides the built-in classes, it refuses the
// configured pod and service ranges, the apiserver's and NATS's
// addresses, this machine's addresses and what the caches say.
func newEgressGuard(cfg Config, apiserverURL string, a clusterAddresses) (*egress.Guard, error) {
	var deny []egress.Range
	for _, c := range []struct{ cidr, flag, what string }{
		{cfg.ClusterCIDR, "cluster-cidr", "in the cluster's pod range (--cluster-cidr)"},
		{cfg.ServiceCIDR, "service-cidr", "in the cluster's service range (--service-cidr)"},
	} {
		r, ok := egress.CIDR(c.cidr, c.what)
		if !ok {
			return nil, errdefs.Invalid(c.flag, "%q is not a CIDR range", c.cidr)
		}
		deny = append(deny, r)
	}
	for _, h := range []struct{ url, what string }{
		{apiserverURL, "the apiserver's address"},
		{cfg.NATSURL, "the NATS server's address"},
	} {
		if r, ok := egress.Host(h.url, h.what); ok {
			deny = append(deny, r)
		}
	}
	g := egress.New(egress.Config{Allow: cfg.EgressAllow, Deny: deny, Sources: []egress.Source{egress.OwnAddresses, a.ranges}})
	warnOpened(g.Allowed())
	return g, nil
}

// warnOpened logs the allowed ranges that open this machine's own
// addresses, the local port's among them.
func warnOpened(allowed []netip.Prefix) {
	own, err := egress.OwnAddresses()
	if err != nil {
		return
	}
	for _, p := range allowed {
		for _, r := range own {
			if p.Contains(r.Prefix.Addr()) {
				log.WithFields(log.Fields{"range": p, "address": r.Prefix.Addr()}).Warn(
					"funcrunner: --egress-allow-cidrs opens an address of this machine: callbacks may reach every port on it, the apiserver's local port (the admin) too")
				break
			}
		}
	}
}

// ranges is the Source of what the caches know.
func (a clusterAddresses) ranges() ([]egress.Range, error) {
	var out []egress.Range
	add := func(r egress.Range, ok bool) {
		if ok {
			out = append(out, r)
		}
	}
	for _, n := range a.nodes.List(nil) {
		for _, addr := range n.Status.Addresses {
			add(egress.Host(addr.Address, fmt.Sprintf("node %s's address", n.Name)))
		}
		for _, c := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
			add(egress.CIDR(c, fmt.Sprintf("in node %s's pod range", n.Name)))
		}
	}
	for _, s := range a.services.List(nil) {
		add(egress.Host(s.Spec.ClusterIP, fmt.Sprintf("Service %s/%s's cluster IP", s.Namespace, s.Name)))
	}
	if ep, ok := a.eps.Get(api.DefaultNamespace, "kubernetes"); ok {
		for _, s := range ep.Subsets {
			for _, addr := range s.Addresses {
				add(egress.Host(addr.IP, "the apiserver's address (the kubernetes Service's endpoint)"))
			}
		}
	}
	for _, l := range a.leases.ListNamespace(function.RunnerNamespace, nil) {
		add(egress.Host(l.Annotations[function.AnnotationRunnerURL], fmt.Sprintf("the address of function runner lease %s", l.Name)))
	}
	return out, nil
}
