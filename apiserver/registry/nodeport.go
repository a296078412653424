package registry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation/upstream"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
	"minik8s/pkg/storage/etcd"
)

// serviceTypeNodePort is the Service type whose ports get node ports.
const serviceTypeNodePort = "NodePort"

// MaxNodePorts is the most ports a NodePort Service has: it is stored with
// its cluster IP and a record of each node port in one etcd transaction.
// Kubernetes counts node ports in a bitmap and has no such bound; here
// more are refused as too many rather than failing in etcd (503).
const MaxNodePorts = etcd.MaxTxnOps - 2

// checkNodePorts refuses node ports on a Service that gets none, asked
// ones out of the range or twice in one Service, and more than a Service
// can hold.
func (r *Store) checkNodePorts(svc *api.Service) error {
	if n := len(svc.Spec.Ports); svc.Spec.Type == serviceTypeNodePort && n > MaxNodePorts {
		return upstream.Invalid(r.Resource, svc.Name, field.ErrorList{field.TooMany(field.NewPath("spec", "ports"), n, MaxNodePorts)})
	}
	seen := map[int32]bool{}
	for i, p := range svc.Spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		field := fmt.Sprintf("spec.ports[%d].nodePort", i)
		if svc.Spec.Type != serviceTypeNodePort {
			return errdefs.Invalid(field, "only a Service of type NodePort has node ports")
		}
		if a := r.NodePorts; a != nil {
			if first, last := a.Bounds(); p.NodePort < first || p.NodePort > last {
				return errdefs.Invalid(field, "%d is not in the node port range %d-%d", p.NodePort, first, last)
			}
		}
		if seen[p.NodePort] {
			return errdefs.Invalid(field, "%d is given twice", p.NodePort)
		}
		seen[p.NodePort] = true
	}
	return nil
}

// createServiceWithNodePorts stores a NodePort Service with its cluster IP
// and a node port for each of its ports in one transaction: the asked ones
// if they are free, else free ones. A member taken between the search and
// the transaction makes it fail whole, and it is tried again.
func (r *Store) createServiceWithNodePorts(ctx context.Context, key string, svc *api.Service) error {
	askedIP := svc.Spec.ClusterIP
	if askedIP != "" && askedIP != "None" && r.IPs != nil {
		var err error
		if askedIP, err = r.IPs.Canonical(askedIP); err != nil {
			return err
		}
	}
	asked := make([]int32, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		asked[i] = p.NodePort
	}
	for attempt := 0; attempt < 5; attempt++ {
		used, err := r.NodePorts.Used(ctx)
		if err != nil {
			return err
		}
		for i, p := range asked {
			if p != 0 && used[strconv.Itoa(int(p))] {
				return &errdefs.FieldError{Class: errdefs.ErrAlreadyExists, Field: fmt.Sprintf("spec.ports[%d].nodePort", i),
					Reason: fmt.Sprintf("%d is already allocated to another service", p)}
			}
		}
		items := []storage.Item{{Key: key, Object: svc}}
		picked := false
		if askedIP != "None" && r.IPs != nil {
			ip := askedIP
			if ip == "" {
				free, err := r.IPs.Free(ctx, 1, nil)
				if err != nil {
					return err
				}
				ip, picked = free[0], true
			}
			setClusterIP(svc, ip)
			items = append(items, r.IPs.Item(ip, svc))
		}
		taken := map[string]bool{}
		for _, p := range asked {
			if p != 0 {
				taken[strconv.Itoa(int(p))] = true
			}
		}
		for i := range svc.Spec.Ports {
			port := asked[i]
			if port == 0 {
				free, err := r.NodePorts.Free(ctx, 1, taken)
				if err != nil {
					return err
				}
				n, _ := strconv.Atoi(free[0])
				port, picked = int32(n), true
				taken[free[0]] = true
			}
			svc.Spec.Ports[i].NodePort = port
			items = append(items, r.NodePorts.Item(strconv.Itoa(int(port)), svc))
		}
		err = r.Storage.CreateMany(ctx, items, r.TTL)
		if !errdefs.IsAlreadyExists(err) {
			return err
		}
		if r.Storage.Get(ctx, key, &api.Service{}) == nil {
			return fmt.Errorf("Service %q already exists: %w", svc.Name, errdefs.ErrAlreadyExists)
		}
		if !picked {
			return &errdefs.FieldError{Class: errdefs.ErrAlreadyExists, Field: "spec.ports[].nodePort",
				Reason: "a node port or the cluster IP asked for is already allocated to another service"}
		}
	}
	return fmt.Errorf("node ports of Service %q: taken by others five times over: %w", svc.Name, errdefs.ErrConflict)
}

// keepNodePorts makes an update keep the node ports a Service holds: a
// port updated without one keeps the one it had; changing one, or the
// Service's type away from NodePort, is refused.
func (r *Store) keepNodePorts(cur, next api.Object) error {
	c, ok := cur.(*api.Service)
	if !ok {
		return nil
	}
	n := next.(*api.Service)
	held := map[string]int32{}
	for _, p := range c.Spec.Ports {
		if p.NodePort != 0 {
			held[servicePortKey(p)] = p.NodePort
		}
	}
	if len(held) == 0 {
		if c.Spec.Type != n.Spec.Type && n.Spec.Type == serviceTypeNodePort {
			return errdefs.Invalid("spec.type", "a Service cannot become NodePort; create it as one")
		}
		return r.checkNodePorts(n)
	}
	if n.Spec.Type != c.Spec.Type {
		return errdefs.Invalid("spec.type", "field is immutable on a NodePort Service (is %q)", c.Spec.Type)
	}
	if len(n.Spec.Ports) != len(c.Spec.Ports) {
		return errdefs.Invalid("spec.ports", "the ports of a NodePort Service are immutable")
	}
	for i := range n.Spec.Ports {
		p := &n.Spec.Ports[i]
		want, ok := held[servicePortKey(*p)]
		if !ok {
			return errdefs.Invalid(fmt.Sprintf("spec.ports[%d]", i), "the ports of a NodePort Service are immutable")
		}
		if p.NodePort == 0 {
			p.NodePort = want
		}
		if p.NodePort != want {
			return errdefs.Invalid(fmt.Sprintf("spec.ports[%d].nodePort", i), "field is immutable (is %d, asked %d)", want, p.NodePort)
		}
	}
	return nil
}

func servicePortKey(p api.ServicePort) string {
	proto := strings.ToUpper(p.Protocol)
	if proto == "" {
		proto = "TCP"
	}
	return p.Name + "/" + proto + "/" + strconv.Itoa(int(p.Port))
}

// releaseNodePorts frees the node ports of a deleted Service.
func (r *Store) releaseNodePorts(ctx context.Context, obj api.Object) {
	svc, ok := obj.(*api.Service)
	if !ok || r.NodePorts == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			r.NodePorts.Release(rctx, strconv.Itoa(int(p.NodePort)), svc.UID)
		}
	}
}
