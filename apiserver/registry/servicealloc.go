package registry

import (
	"context"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// serviceStrategy allocates a Service its cluster IP and node ports on
// create, keeps them on update and frees them on delete.
type serviceStrategy struct{ defaultStrategy }

func (serviceStrategy) create(ctx context.Context, r *Store, key string, obj api.Object) error {
	return r.createService(ctx, key, obj.(*api.Service))
}

func (serviceStrategy) prepareForUpdate(r *Store, cur, next api.Object) error {
	if err := r.keepClusterIP(cur, next); err != nil {
		return err
	}
	return r.keepNodePorts(cur, next)
}

func (serviceStrategy) afterDelete(ctx context.Context, r *Store, obj api.Object) {
	r.releaseClusterIP(ctx, obj)
	r.releaseNodePorts(ctx, obj)
}

// createService stores a Service and the allocation of its cluster IP in
// one transaction: both or neither, so a refused create (the name is
// taken) or a crash in between leaves no address allocated without its
// Service. The address is the one asked for if it is free and in range,
// else the next free one ("None" asks for none).
func (r *Store) createService(ctx context.Context, key string, svc *api.Service) error {
	if err := r.checkNodePorts(svc); err != nil {
		return err
	}
	if svc.Spec.Type == serviceTypeNodePort && r.NodePorts != nil {
		return r.createServiceWithNodePorts(ctx, key, svc)
	}
	a := r.IPs
	if a == nil || svc.Spec.ClusterIP == "None" {
		return r.Storage.Create(ctx, key, svc, r.TTL)
	}
	asked := svc.Spec.ClusterIP
	if asked != "" {
		var err error
		if asked, err = a.Canonical(asked); err != nil {
			return err
		}
	}
	return a.Create(ctx, key, svc, r.TTL, asked, "spec.clusterIP", func(ip string) { setClusterIP(svc, ip) })
}

// setClusterIP gives the Service its address, in both of the fields that
// say it (clusterIPs is the list form, one address here).
func setClusterIP(svc *api.Service, ip string) {
	svc.Spec.ClusterIP = ip
	svc.Spec.ClusterIPs = nil
	if ip != "" {
		svc.Spec.ClusterIPs = []string{ip}
	}
}

// keepClusterIP makes an update keep the Service's cluster IP: an empty
// one keeps the allocated address, any other change is refused.
func (r *Store) keepClusterIP(cur, next api.Object) error {
	c, ok := cur.(*api.Service)
	if !ok {
		return nil
	}
	n := next.(*api.Service)
	if n.Spec.ClusterIP == "" {
		n.Spec.ClusterIP = c.Spec.ClusterIP
	}
	if n.Spec.ClusterIP != c.Spec.ClusterIP {
		return errdefs.Invalid("spec.clusterIP", "field is immutable (is %q, asked %q)", c.Spec.ClusterIP, n.Spec.ClusterIP)
	}
	if len(n.Spec.ClusterIPs) > 0 && (len(n.Spec.ClusterIPs) != 1 || n.Spec.ClusterIPs[0] != c.Spec.ClusterIP) {
		return errdefs.Invalid("spec.clusterIPs", "field is immutable (is %q, asked %q)", c.Spec.ClusterIPs, n.Spec.ClusterIPs)
	}
	setClusterIP(n, c.Spec.ClusterIP)
	return nil
}

// releaseClusterIP frees the address of a deleted Service.
func (r *Store) releaseClusterIP(ctx context.Context, obj api.Object) {
	if svc, ok := obj.(*api.Service); ok && r.IPs != nil && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != "None" {
		// The Service is gone whatever becomes of the request.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		r.IPs.Release(rctx, svc.Spec.ClusterIP, svc.UID)
	}
}
