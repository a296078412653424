package apiserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// DefaultServiceCIDR is the range cluster IPs come from: inside loopback,
// so that every node can listen on them without touching the network.
const DefaultServiceCIDR = "127.1.0.0/16"

// ipAllocPrefix is where allocated cluster IPs are recorded, one key per
// address. Creating the key is the allocation: etcd's create-if-absent
// makes it race-free across concurrent creates and across apiservers.
const ipAllocPrefix = keyRoot + "ipallocations/"

// ipAllocation records which Service holds a cluster IP (its name is the IP).
type ipAllocation struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata,omitempty"`
	Service        api.ObjectReference `json:"service"`
}

// ipAllocator hands out the addresses of a service range.
type ipAllocator struct {
	store storage.Interface
	cidr  *net.IPNet
	// first and size: the usable addresses, without the range's network
	// and broadcast addresses.
	first, size uint32

	mu   sync.Mutex
	next uint32 // where the next search starts, to spread reuse
}

// ParseServiceCIDR checks a service range: IPv4, with room for addresses.
func ParseServiceCIDR(cidr string) (*net.IPNet, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, errdefs.Invalid("service-cidr", "%q is not a CIDR range: %v", cidr, err)
	}
	ones, bits := n.Mask.Size()
	if n.IP.To4() == nil || bits != 32 {
		return nil, errdefs.Invalid("service-cidr", "%q is not an IPv4 range", cidr)
	}
	if ones > 30 {
		return nil, errdefs.Invalid("service-cidr", "%q is too small (at most /30)", cidr)
	}
	return n, nil
}

func newIPAllocator(store storage.Interface, cidr string) (*ipAllocator, error) {
	n, err := ParseServiceCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ones, _ := n.Mask.Size()
	return &ipAllocator{
		store: store,
		cidr:  n,
		first: binary.BigEndian.Uint32(n.IP.To4()) + 1,
		size:  uint32(1)<<(32-ones) - 2,
	}, nil
}

func (a *ipAllocator) ipAt(i uint32) string {
	b := make(net.IP, 4)
	binary.BigEndian.PutUint32(b, a.first+i)
	return b.String()
}

// inRange reports whether ip is a usable address of the range.
func (a *ipAllocator) inRange(ip net.IP) bool {
	v4 := ip.To4()
	if v4 == nil || !a.cidr.Contains(v4) {
		return false
	}
	i := binary.BigEndian.Uint32(v4) - a.first
	return i < a.size
}

func (a *ipAllocator) record(ip string, svc *api.Service) *ipAllocation {
	now := time.Now().UTC().Truncate(time.Second)
	return &ipAllocation{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "IPAllocation"},
		ObjectMeta: api.ObjectMeta{Name: ip, CreationTimestamp: &now},
		Service:    api.ObjectReference{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID},
	}
}

func (a *ipAllocator) used(ctx context.Context) (map[string]bool, error) {
	objs, _, err := a.store.List(ctx, ipAllocPrefix, func() api.Object { return &ipAllocation{} })
	if err != nil {
		return nil, err
	}
	used := make(map[string]bool, len(objs))
	for _, o := range objs {
		used[o.GetObjectMeta().Name] = true
	}
	return used, nil
}

// repair releases addresses whose Service no longer holds them (an
// apiserver that died between allocating and storing, say).
func (a *ipAllocator) repair(ctx context.Context) (int, error) {
	objs, _, err := a.store.List(ctx, ipAllocPrefix, func() api.Object { return &ipAllocation{} })
	if err != nil {
		return 0, err
	}
	released := 0
	for _, o := range objs {
		// A Service and its address are created together, so an
		// allocation without its Service is a leak, however young.
		alloc := o.(*ipAllocation)
		var svc api.Service
		ref := alloc.Service
		err := a.store.Get(ctx, keyRoot+api.ServicesResource.Name+"/"+ref.Namespace+"/"+ref.Name, &svc)
		if err == nil && svc.UID == ref.UID && svc.Spec.ClusterIP == alloc.Name {
			continue
		}
		if err != nil && !errdefs.IsNotFound(err) {
			return released, err
		}
		if err := a.store.Delete(ctx, ipAllocPrefix+alloc.Name, &ipAllocation{}, alloc.ResourceVersion); err == nil {
			log.WithFields(log.Fields{"ip": alloc.Name, "service": ref.Namespace + "/" + ref.Name}).Info("reclaimed leaked cluster IP")
			released++
		}
	}
	return released, nil
}

// release frees ip if the Service of that uid holds it.
func (a *ipAllocator) release(ctx context.Context, ip, uid string) {
	parsed := net.ParseIP(ip)
	if parsed == nil || !a.inRange(parsed) {
		return
	}
	key := ipAllocPrefix + parsed.To4().String()
	var alloc ipAllocation
	err := a.store.Get(ctx, key, &alloc)
	if err == nil {
		if alloc.Service.UID != uid {
			return // reclaimed and given to another Service meanwhile
		}
		err = a.store.Delete(ctx, key, &ipAllocation{}, alloc.ResourceVersion)
	}
	if err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("ip", ip).Warn("releasing cluster IP")
	}
}

// createService stores a Service and the allocation of its cluster IP in
// one transaction: both or neither, so a refused create (the name is
// taken) or a crash in between leaves no address allocated without its
// Service. The address is the one asked for if it is free and in range,
// else the next free one ("None" asks for none).
func (r *registry) createService(ctx context.Context, key string, svc *api.Service) error {
	a := r.ips
	if a == nil || svc.Spec.ClusterIP == "None" {
		return r.store.Create(ctx, key, svc, r.ttl)
	}
	if asked := svc.Spec.ClusterIP; asked != "" {
		parsed := net.ParseIP(asked)
		if parsed == nil || !a.inRange(parsed) {
			return errdefs.Invalid("spec.clusterIP", "%s is not in the service range %s", asked, a.cidr)
		}
		svc.Spec.ClusterIP = parsed.To4().String()
		err := r.createWithIP(ctx, key, svc)
		if errdefs.IsAlreadyExists(err) && !r.exists(ctx, key) {
			return &errdefs.FieldError{Class: errdefs.ErrAlreadyExists, Field: "spec.clusterIP",
				Reason: fmt.Sprintf("%s is already allocated to another service", svc.Spec.ClusterIP)}
		}
		return err
	}
	for attempt := 0; attempt < 2; attempt++ {
		used, err := a.used(ctx)
		if err != nil {
			return err
		}
		a.mu.Lock()
		start := a.next
		a.mu.Unlock()
		for k := uint32(0); k < a.size; k++ {
			i := (start + k) % a.size
			ip := a.ipAt(i)
			if used[ip] {
				continue
			}
			svc.Spec.ClusterIP = ip
			err := r.createWithIP(ctx, key, svc)
			if errdefs.IsAlreadyExists(err) {
				if r.exists(ctx, key) {
					svc.Spec.ClusterIP = ""
					return err
				}
				continue // the address was taken since the list: try the next
			}
			if err != nil {
				svc.Spec.ClusterIP = ""
				return err
			}
			a.mu.Lock()
			a.next = (i + 1) % a.size
			a.mu.Unlock()
			return nil
		}
		// Full: reclaim addresses whose Service is gone, then look again.
		if n, err := a.repair(ctx); err != nil || n == 0 {
			break
		}
	}
	svc.Spec.ClusterIP = ""
	return fmt.Errorf("no cluster IP left in the service range %s: %w", a.cidr, errdefs.ErrConflict)
}

// createWithIP writes svc and its address's allocation together.
func (r *registry) createWithIP(ctx context.Context, key string, svc *api.Service) error {
	ip := svc.Spec.ClusterIP
	err := r.store.CreateMany(ctx, []storage.Item{
		{Key: key, Object: svc},
		{Key: ipAllocPrefix + ip, Object: r.ips.record(ip, svc)},
	}, r.ttl)
	if errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("%s %q already exists: %w", r.res.Kind, svc.Name, errdefs.ErrAlreadyExists)
	}
	return err
}

func (r *registry) exists(ctx context.Context, key string) bool {
	err := r.store.Get(ctx, key, r.res.New())
	return err == nil
}

// runRepair releases, every interval until ctx ends, the addresses whose
// Service is gone (an apiserver that died between deleting a Service and
// releasing its address), as Kubernetes' allocator repair does.
func (a *ipAllocator) runRepair(ctx context.Context, interval time.Duration) {
	for {
		if _, err := a.repair(ctx); err != nil && ctx.Err() == nil {
			log.WithError(err).Debug("cluster IP repair failed; trying again later")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// keepClusterIP makes an update keep the Service's cluster IP: an empty
// one keeps the allocated address, any other change is refused.
func (r *registry) keepClusterIP(cur, next api.Object) error {
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
	return nil
}

// releaseClusterIP frees the address of a deleted Service.
func (r *registry) releaseClusterIP(ctx context.Context, obj api.Object) {
	if svc, ok := obj.(*api.Service); ok && r.ips != nil && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != "None" {
		// The Service is gone whatever becomes of the request.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		r.ips.release(rctx, svc.Spec.ClusterIP, svc.UID)
	}
}
