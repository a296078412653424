package netpol

import (
	"reflect"
	"testing"

	"minik8s/pkg/api"
)

func pod(ns, name, ip string, labels map[string]string, ports ...api.ContainerPort) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	p.Spec.Containers = []api.Container{{Name: "c", Ports: ports}}
	p.Status.Phase = api.PodRunning
	if ip != "" {
		p.Status.PodIP, p.Status.PodIPs = ip, []api.PodIP{{IP: ip}}
	}
	return p
}

func policy(ns string, sel map[string]string, types []string, in []api.NetworkPolicyIngressRule, out []api.NetworkPolicyEgressRule) *api.NetworkPolicy {
	return &api.NetworkPolicy{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: api.NetworkPolicySpec{PodSelector: api.LabelSelector{MatchLabels: sel}, PolicyTypes: types, Ingress: in, Egress: out}}
}

func str(s string) *string                       { return &s }
func port(s string) *api.IntOrString             { p := api.IntOrString(s); return &p }
func i32(n int32) *int32                         { return &n }
func sel(m map[string]string) *api.LabelSelector { return &api.LabelSelector{MatchLabels: m} }

var (
	ingress = []string{api.PolicyTypeIngress}
	egress  = []string{api.PolicyTypeEgress}
)

func TestFor(t *testing.T) {
	web := pod("a", "web", "198.18.0.2", map[string]string{"app": "web"}, api.ContainerPort{Name: "http", ContainerPort: 8080})
	a2 := pod("a", "client", "198.18.0.3", map[string]string{"app": "client"})
	b1 := pod("b", "other", "198.18.1.2", map[string]string{"app": "client"}, api.ContainerPort{Name: "http", ContainerPort: 9090})
	b2 := pod("b", "db", "198.18.1.3", map[string]string{"app": "db"})
	hostNet := pod("b", "hostnet", "192.0.2.10", map[string]string{"app": "client"})
	hostNet.Spec.HostNetwork = true
	done := pod("a", "done", "198.18.0.9", map[string]string{"app": "client"})
	done.Status.Phase = api.PodSucceeded
	nss := []*api.Namespace{{ObjectMeta: api.ObjectMeta{Name: "a", Labels: map[string]string{"team": "a"}}},
		{ObjectMeta: api.ObjectMeta{Name: "b", Labels: map[string]string{"team": "b"}}}}
	pods := []*api.Pod{web, a2, b1, b2, hostNet, done}
	any := Allow{CIDR: "0.0.0.0/0"}

	for _, tc := range []struct {
		name     string
		policies []*api.NetworkPolicy
		pod      *api.Pod
		want     Rules
	}{
		{name: "no policy", pod: web, want: Rules{}},
		{name: "a policy of another namespace", pod: web,
			policies: []*api.NetworkPolicy{policy("b", nil, ingress, nil, nil)}, want: Rules{}},
		{name: "a policy selecting other pods", pod: web,
			policies: []*api.NetworkPolicy{policy("a", map[string]string{"app": "db"}, ingress, nil, nil)}, want: Rules{}},
		{name: "deny all ingress", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, nil, nil)}, want: Rules{IngressIsolated: true}},
		{name: "deny all egress", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, egress, nil, nil)}, want: Rules{EgressIsolated: true}},
		{name: "deny all, and allow the own namespace (ended and host-network pods are no peers)", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, nil, nil),
				policy("a", nil, ingress, []api.NetworkPolicyIngressRule{{From: []api.NetworkPolicyPeer{{PodSelector: &api.LabelSelector{}}}}}, nil)},
			want: Rules{IngressIsolated: true, Ingress: []Allow{{CIDR: "198.18.0.2/32"}, {CIDR: "198.18.0.3/32"}}}},
		{name: "a rule without peers or ports allows all", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, []api.NetworkPolicyIngressRule{{}}, nil)},
			want:     Rules{IngressIsolated: true, Ingress: []Allow{any}}},
		{name: "namespace selector, with pod selector: both", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, []api.NetworkPolicyIngressRule{{From: []api.NetworkPolicyPeer{
				{NamespaceSelector: sel(map[string]string{"team": "b"}), PodSelector: sel(map[string]string{"app": "client"})}}}}, nil)},
			want: Rules{IngressIsolated: true, Ingress: []Allow{{CIDR: "198.18.1.2/32"}}}},
		{name: "empty namespace selector: every namespace's pods", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, []api.NetworkPolicyIngressRule{{From: []api.NetworkPolicyPeer{
				{NamespaceSelector: &api.LabelSelector{}, PodSelector: sel(map[string]string{"app": "client"})}}}}, nil)},
			want: Rules{IngressIsolated: true, Ingress: []Allow{{CIDR: "198.18.0.3/32"}, {CIDR: "198.18.1.2/32"}}}},
		{name: "ipBlock with except, port range and UDP", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, []api.NetworkPolicyIngressRule{{
				From:  []api.NetworkPolicyPeer{{IPBlock: &api.IPBlock{CIDR: "192.0.2.0/24", Except: []string{"192.0.2.128/25"}}}},
				Ports: []api.NetworkPolicyPort{{Protocol: str("TCP"), Port: port("8000"), EndPort: i32(8080)}, {Protocol: str("UDP")}}}}, nil)},
			want: Rules{IngressIsolated: true, Ingress: []Allow{
				{CIDR: "192.0.2.0/24", Except: []string{"192.0.2.128/25"}, Protocol: "TCP", Port: 8000, EndPort: 8080},
				{CIDR: "192.0.2.0/24", Except: []string{"192.0.2.128/25"}, Protocol: "UDP"}}}},
		{name: "named ingress port: the pod's own", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, []api.NetworkPolicyIngressRule{{
				Ports: []api.NetworkPolicyPort{{Protocol: str("TCP"), Port: port("http")}, {Protocol: str("TCP"), Port: port("nosuch")}}}}, nil)},
			want: Rules{IngressIsolated: true, Ingress: []Allow{{CIDR: "0.0.0.0/0", Protocol: "TCP", Port: 8080}}}},
		{name: "named egress port: each peer's; none of an ipBlock", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, egress, nil, []api.NetworkPolicyEgressRule{{
				To:    []api.NetworkPolicyPeer{{NamespaceSelector: sel(map[string]string{"team": "b"})}, {IPBlock: &api.IPBlock{CIDR: "192.0.2.0/24"}}},
				Ports: []api.NetworkPolicyPort{{Protocol: str("TCP"), Port: port("http")}}}})},
			want: Rules{EgressIsolated: true, Egress: []Allow{{CIDR: "198.18.1.2/32", Protocol: "TCP", Port: 9090}}}},
		{name: "DNS egress as policies write it", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, egress, nil, []api.NetworkPolicyEgressRule{{
				Ports: []api.NetworkPolicyPort{{Protocol: str("UDP"), Port: port("53")}, {Protocol: str("TCP"), Port: port("53")}}}})},
			want: Rules{EgressIsolated: true, Egress: []Allow{{CIDR: "0.0.0.0/0", Protocol: "UDP", Port: 53}, {CIDR: "0.0.0.0/0", Protocol: "TCP", Port: 53}}}},
		{name: "the same allowance of many policies once", pod: web,
			policies: []*api.NetworkPolicy{policy("a", nil, ingress, []api.NetworkPolicyIngressRule{{}}, nil), policy("a", map[string]string{"app": "web"}, ingress, []api.NetworkPolicyIngressRule{{}}, nil)},
			want:     Rules{IngressIsolated: true, Ingress: []Allow{any}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := For(tc.pod, Cluster{Policies: tc.policies, Pods: pods, Namespaces: nss})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
