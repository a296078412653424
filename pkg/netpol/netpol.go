// Package netpol computes what the NetworkPolicies of a cluster allow a pod:
// for each direction the policies isolate, the addresses, protocols and
// ports its connections may come from (ingress) or go to (egress), as
// Kubernetes defines them. Whoever enforces (the kubelet, in each pod's
// network namespace) turns these into rules.
package netpol

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/labels"
)

// Allow is one kind of connection allowed: from (or to) CIDR but Except,
// with Protocol (any when "") and destination ports Port to EndPort (any
// when Port is 0).
type Allow struct {
	CIDR     string
	Except   []string
	Protocol string
	Port     int32
	EndPort  int32
}

// Rules are what the policies allow one pod; a nil direction is one no
// policy isolates (everything allowed), an empty one allows nothing.
type Rules struct {
	Ingress, Egress []Allow
	// IngressIsolated and EgressIsolated say whether a policy isolates
	// the pod for that direction.
	IngressIsolated, EgressIsolated bool
}

// Cluster is what the rules are computed from: every policy, every pod (the
// peers, by their status.podIPs) and every namespace (by their labels).
type Cluster struct {
	Policies   []*api.NetworkPolicy
	Pods       []*api.Pod
	Namespaces []*api.Namespace
}

// For computes the rules of pod. A policy whose selector does not parse
// (which validation refuses) selects nothing.
func For(pod *api.Pod, c Cluster) Rules {
	var r Rules
	nsLabels := map[string]map[string]string{}
	for _, ns := range c.Namespaces {
		nsLabels[ns.Name] = ns.Labels
	}
	for _, np := range c.Policies {
		if np.Namespace != pod.Namespace || !selects(&np.Spec.PodSelector, pod.Labels) {
			continue
		}
		if slices.Contains(np.Spec.PolicyTypes, api.PolicyTypeIngress) {
			r.IngressIsolated = true
			for _, rule := range np.Spec.Ingress {
				r.Ingress = append(r.Ingress, allows(np.Namespace, rule.From, rule.Ports, pod, nil, c, nsLabels)...)
			}
		}
		if slices.Contains(np.Spec.PolicyTypes, api.PolicyTypeEgress) {
			r.EgressIsolated = true
			for _, rule := range np.Spec.Egress {
				r.Egress = append(r.Egress, allows(np.Namespace, rule.To, rule.Ports, nil, pod, c, nsLabels)...)
			}
		}
	}
	r.Ingress, r.Egress = dedup(r.Ingress), dedup(r.Egress)
	return r
}

// allows are one rule's allowances. Named ports are the destination's:
// for ingress (self set) this pod's, for egress each peer pod's; an
// ipBlock has no names, so a named port allows it nothing.
func allows(ns string, peers []api.NetworkPolicyPeer, ports []api.NetworkPolicyPort, self, src *api.Pod, c Cluster, nsLabels map[string]map[string]string) []Allow {
	type peer struct {
		cidr   string
		except []string
		pod    *api.Pod
	}
	var ps []peer
	if len(peers) == 0 {
		ps = []peer{{cidr: "0.0.0.0/0"}}
	}
	for _, p := range peers {
		if p.IPBlock != nil {
			ps = append(ps, peer{cidr: p.IPBlock.CIDR, except: p.IPBlock.Except})
			continue
		}
		for _, pod := range c.Pods {
			// A pod on its node's network is its node; a pod that ended
			// may have given its address to another.
			if pod.Spec.HostNetwork || pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed ||
				!peerSelects(ns, p, pod, nsLabels) {
				continue
			}
			for _, ip := range podIPs(pod) {
				ps = append(ps, peer{cidr: ip + "/32", pod: pod})
			}
		}
	}
	var out []Allow
	for _, p := range ps {
		if len(ports) == 0 {
			out = append(out, Allow{CIDR: p.cidr, Except: p.except})
			continue
		}
		dst := self
		if src != nil {
			dst = p.pod
		}
		for _, port := range ports {
			a := Allow{CIDR: p.cidr, Except: p.except, Protocol: "TCP"}
			if port.Protocol != nil {
				a.Protocol = *port.Protocol
			}
			if port.Port != nil {
				n, ok := portNumber(*port.Port, a.Protocol, dst)
				if !ok {
					continue
				}
				a.Port = n
				if port.EndPort != nil && *port.EndPort > n {
					a.EndPort = *port.EndPort
				}
			}
			out = append(out, a)
		}
	}
	return out
}

// portNumber is a port by number, or the number of dst's container port of
// that name and protocol.
func portNumber(p api.IntOrString, proto string, dst *api.Pod) (int32, bool) {
	if n, err := strconv.Atoi(string(p)); err == nil {
		return int32(n), n > 0
	}
	if dst == nil {
		return 0, false
	}
	for _, ctr := range dst.Spec.Containers {
		for _, cp := range ctr.Ports {
			cpProto := cp.Protocol
			if cpProto == "" {
				cpProto = "TCP"
			}
			if cp.Name == string(p) && strings.EqualFold(cpProto, proto) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// peerSelects tells whether a pod peer of a policy of namespace ns selects
// pod: pods of ns by podSelector alone, pods of the namespaces
// namespaceSelector selects (all of their pods when podSelector is nil).
func peerSelects(ns string, p api.NetworkPolicyPeer, pod *api.Pod, nsLabels map[string]map[string]string) bool {
	if p.NamespaceSelector == nil {
		if pod.Namespace != ns {
			return false
		}
	} else if labelsOf, ok := nsLabels[pod.Namespace]; !ok || !selects(p.NamespaceSelector, labelsOf) {
		return false
	}
	return p.PodSelector == nil || selects(p.PodSelector, pod.Labels)
}

func selects(ls *api.LabelSelector, set map[string]string) bool {
	sel, err := labels.FromLabelSelector(ls)
	return err == nil && sel.Matches(set)
}

// podIPs are a pod's IPv4 addresses (the pod network is IPv4).
func podIPs(p *api.Pod) []string {
	var out []string
	add := func(s string) {
		if ip := net.ParseIP(s); ip != nil && ip.To4() != nil && !slices.Contains(out, ip.To4().String()) {
			out = append(out, ip.To4().String())
		}
	}
	for _, ip := range p.Status.PodIPs {
		add(ip.IP)
	}
	add(p.Status.PodIP)
	return out
}

// dedup drops repeated allowances (many policies often allow the same),
// keeping the first of each.
func dedup(as []Allow) []Allow {
	var out []Allow
	seen := map[string]bool{}
	for _, a := range as {
		k := fmt.Sprint(a.CIDR, a.Except, a.Protocol, a.Port, a.EndPort)
		if !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
	}
	return out
}
