package apiserver

import (
	"context"
	"net"
	"reflect"
	"strconv"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// The kubernetes Service in default points at the apiserver's secure
// port at its advertised address, so that a program in a pod reaches the
// API as client-go expects (KUBERNETES_SERVICE_HOST/PORT and the mounted
// service account token). It has no selector: the apiserver keeps its
// Endpoints, as Kubernetes' does.

const kubernetesService = "kubernetes"

// resolveAdvertiseAddress settles AdvertiseAddress as kube-apiserver does
// (utilnet.ResolveBindAddress): the one given, else the secure port's
// bound address, else (binding every address) the address of the default
// route's link; loopback when there is none, where only programs of this
// machine would reach the port anyway. A bound loopback address stays:
// nothing else reaches it.
func (c *Config) resolveAdvertiseAddress() error {
	if c.AdvertiseAddress != "" {
		ip := net.ParseIP(c.AdvertiseAddress)
		if ip == nil || ip.IsUnspecified() || ip.To4() == nil {
			return errdefs.Invalid("advertise-address", "%q is not an IPv4 address the cluster can reach", c.AdvertiseAddress)
		}
		c.AdvertiseAddress = ip.String()
		return nil
	}
	if c.SecureAddress == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(c.SecureAddress)
	if err != nil {
		return errdefs.Invalid("secure-port", "%q: %v", c.SecureAddress, err)
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		c.AdvertiseAddress = ip.String()
		return nil
	}
	c.AdvertiseAddress = "127.0.0.1"
	if ip, err := utilnet.ResolveBindAddress(nil); err == nil && ip.To4() != nil {
		c.AdvertiseAddress = ip.String()
	}
	return nil
}

// advertiseIP is the address the kubernetes Service's Endpoints name: the
// advertised one, else the bound address, else loopback.
func (s *Server) advertiseIP(secure net.Addr) string {
	if s.cfg.AdvertiseAddress != "" {
		return s.cfg.AdvertiseAddress
	}
	tcp, ok := secure.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		return "127.0.0.1"
	}
	return tcp.IP.String()
}

// ensureKubernetesService creates or repairs the Service and its Endpoints.
func (s *Server) ensureKubernetesService(ctx context.Context, secure net.Addr) error {
	port := int32(secure.(*net.TCPAddr).Port)
	svcs := s.registries[api.ServicesResource.Name]
	if _, err := svcs.Get(ctx, api.DefaultNamespace, kubernetesService); errdefs.IsNotFound(err) {
		svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: kubernetesService, Namespace: api.DefaultNamespace,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
			Spec: api.ServiceSpec{Ports: []api.ServicePort{{Name: "https", Protocol: "TCP", Port: 443, TargetPort: api.IntOrString(strconv.Itoa(int(port)))}}}}
		if ip, err := kubernetesServiceIP(s.cfg.ServiceCIDR); err == nil {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip.String(), []string{ip.String()}
		}
		_, err := svcs.Create(ctx, api.DefaultNamespace, svc)
		if err != nil && !errdefs.IsAlreadyExists(err) {
			// The first address may be taken by a Service made before
			// this one existed: any other will do.
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
			if _, err := svcs.Create(ctx, api.DefaultNamespace, svc); err != nil && !errdefs.IsAlreadyExists(err) {
				return err
			}
		}
	} else if err != nil {
		return err
	}
	s.selfEndpoint.Store(net.JoinHostPort(s.advertiseIP(secure), strconv.Itoa(int(port))))
	want := []api.EndpointSubset{{
		Addresses: []api.EndpointAddress{{IP: s.advertiseIP(secure), Port: port}},
		Ports:     []api.EndpointPort{{Name: "https", Port: port, Protocol: "TCP"}},
	}}
	eps := s.registries[api.EndpointsResource.Name]
	cur, err := eps.Get(ctx, api.DefaultNamespace, kubernetesService)
	switch {
	case errdefs.IsNotFound(err):
		_, err = eps.Create(ctx, api.DefaultNamespace, &api.Endpoints{
			ObjectMeta: api.ObjectMeta{Name: kubernetesService, Namespace: api.DefaultNamespace}, Subsets: want})
		if errdefs.IsAlreadyExists(err) {
			err = nil
		}
		return err
	case err != nil:
		return err
	}
	ep := cur.(*api.Endpoints)
	if reflect.DeepEqual(ep.Subsets, want) {
		return nil
	}
	ep.Subsets = want
	_, err = eps.Update(ctx, api.DefaultNamespace, kubernetesService, ep)
	return err
}
