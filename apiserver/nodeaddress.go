package apiserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// A kubelet's serving certificate is issued from the cluster CA, which the
// admin's kubeconfig and every node trust for the apiserver too: a
// certificate for an address that is not the node's own would let its
// holder stand in for whatever serves there. So, as k3s and Kubernetes'
// kubelet-serving approval keep them, it names one address, the node's,
// and never
//   - loopback, unspecified, link-local, multicast or broadcast addresses
//     (127.0.0.1 is the admin kubeconfig's server);
//   - the apiserver's own: its serving certificate's addresses and the
//     addresses the kubernetes Service's Endpoints advertise;
//   - an address another node holds: in its Node's status, or bound to
//     its name at its first join (auth.NodePassword.Address).
// Names are never in it (KubeletServingSpec: the CSR's are ignored), so
// the apiserver's names cannot be.

// checkServingAddress refuses a serving certificate of node name for ip.
func (s *Server) checkServingAddress(ctx context.Context, name string, ip net.IP) error {
	if what := specialAddress(ip); what != "" {
		return fmt.Errorf("node %q is forbidden a serving certificate for %s: a kubelet's certificate never names a %s address: %w", name, ip, what, errdefs.ErrForbidden)
	}
	if s.apiserverAddress(ctx, ip) {
		return fmt.Errorf("node %q is forbidden a serving certificate for %s: that is the apiserver's address: %w", name, ip, errdefs.ErrForbidden)
	}
	holder, err := s.addressHolder(ctx, ip)
	if err != nil {
		return err
	}
	if holder != "" && holder != name {
		return fmt.Errorf("node %q is forbidden a serving certificate for %s: node %q holds that address: %w", name, ip, holder, errdefs.ErrForbidden)
	}
	return nil
}

// specialAddress names the kind of address no node may have a serving
// certificate for, or is "".
func specialAddress(ip net.IP) string {
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip.Equal(net.IPv4bcast):
		return "broadcast"
	}
	return ""
}

// apiserverAddress tells whether ip is one the apiserver serves at or
// advertises.
func (s *Server) apiserverAddress(ctx context.Context, ip net.IP) bool {
	if leaf := s.creds.serving.Leaf; leaf != nil {
		if ipIn(ip, leaf.IPAddresses) {
			return true
		}
	} else if len(s.creds.serving.Certificate) > 0 {
		if leaf, err := x509.ParseCertificate(s.creds.serving.Certificate[0]); err == nil && ipIn(ip, leaf.IPAddresses) {
			return true
		}
	}
	obj, err := s.registries[api.EndpointsResource.Name].Get(ctx, api.DefaultNamespace, kubernetesService)
	if err != nil {
		return false
	}
	for _, sub := range obj.(*api.Endpoints).Subsets {
		for _, a := range sub.Addresses {
			if ip.Equal(net.ParseIP(a.IP)) {
				return true
			}
		}
	}
	return false
}

// addressHolder is the node that holds ip: whose Node reports it, or whose
// name it is bound to; "" when none.
func (s *Server) addressHolder(ctx context.Context, ip net.IP) (string, error) {
	nodes, _, err := s.registries[api.NodesResource.Name].List(ctx, "", registry.Filter{})
	if err != nil {
		return "", err
	}
	for _, o := range nodes {
		for _, a := range o.(*api.Node).Status.Addresses {
			if ip.Equal(net.ParseIP(a.Address)) {
				return o.GetObjectMeta().Name, nil
			}
		}
	}
	return s.nodePasswords.Named(ctx, ip)
}

func ipIn(ip net.IP, ips []net.IP) bool {
	for _, x := range ips {
		if ip.Equal(x) {
			return true
		}
	}
	return false
}
