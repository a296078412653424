package apiserver

import (
	"context"
	"net"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation/upstream"
)

// Kubernetes refuses loopback addresses in Endpoints: a Service would
// carry whoever reaches it (a pod, through a node's service rules) to
// what listens on that node's loopback, the apiserver's local port among
// them, which trusts every connection. minik8s puts nodes on the loopback
// (the test clusters, --pod-network host), whose pods share their node's
// address, and may advertise the apiserver there: a loopback address is
// taken when it is a node's, or the apiserver's secure port (the
// kubernetes Service), and refused as Kubernetes refuses it otherwise.

// admitEndpoints judges the loopback addresses of an Endpoints.
func (s *Server) admitEndpoints(ctx context.Context, obj api.Object) error {
	ep := obj.(*api.Endpoints)
	var nodes []string // read once, at the first loopback address
	var errs field.ErrorList
	for i, sub := range ep.Subsets {
		for _, list := range []struct {
			name  string
			addrs []api.EndpointAddress
		}{{"addresses", sub.Addresses}, {"notReadyAddresses", sub.NotReadyAddresses}} {
			for j, a := range list.addrs {
				ip := net.ParseIP(a.IP)
				if ip == nil || !ip.IsLoopback() || s.isSelf(a, sub.Ports) {
					continue
				}
				if nodes == nil {
					var err error
					if nodes, err = s.nodeAddresses(ctx); err != nil {
						return err
					}
				}
				if !slices.Contains(nodes, ip.String()) {
					errs = append(errs, field.Invalid(field.NewPath("subsets").Index(i).Child(list.name).Index(j).Child("ip"), a.IP,
						"may not be in the loopback range (127.0.0.0/8, ::1/128) unless it is a node's address"))
				}
			}
		}
	}
	return upstream.Invalid(api.EndpointsResource, ep.Name, errs)
}

// isSelf says whether a (with its subset's ports) is the apiserver's
// secure port at the loopback address it advertises.
func (s *Server) isSelf(a api.EndpointAddress, ports []api.EndpointPort) bool {
	self, _ := s.selfEndpoint.Load().(string)
	if self == "" {
		return false
	}
	host, port, _ := net.SplitHostPort(self)
	if a.IP != host || a.Port != 0 && strconv.Itoa(int(a.Port)) != port {
		return false
	}
	for _, p := range ports {
		if strconv.Itoa(int(p.Port)) != port {
			return false
		}
	}
	return true
}

// nodeAddresses are the addresses the nodes report.
func (s *Server) nodeAddresses(ctx context.Context) ([]string, error) {
	reg := s.registries[api.NodesResource.Name]
	objs, _, err := reg.Storage.List(ctx, reg.Prefix(""), reg.Resource.New)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, o := range objs {
		for _, a := range o.(*api.Node).Status.Addresses {
			if ip := net.ParseIP(a.Address); ip != nil {
				out = append(out, ip.String())
			}
		}
	}
	return out, nil
}
