package apiserver

import (
	"context"
	"encoding/binary"
	"net"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

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
	*rangeAllocator
	cidr *net.IPNet
	// first: the first usable address, after the range's network address.
	first uint32
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
	a := &ipAllocator{cidr: n, first: binary.BigEndian.Uint32(n.IP.To4()) + 1}
	a.rangeAllocator = &rangeAllocator{cursor: &rangeCursor{},
		store: store, what: "cluster IP", kind: api.ServicesResource.Kind, rangeText: "service range " + n.String(),
		prefix: ipAllocPrefix,
		// Without the range's network and broadcast addresses.
		size:       uint32(1)<<(32-ones) - 2,
		member:     a.ipAt,
		recordName: func(ip string) string { return ip },
		newRecord:  func(ip string, holder api.Object) api.Object { return a.record(ip, holder.(*api.Service)) },
		newEmpty:   func() api.Object { return &ipAllocation{} },
		holderOf:   func(rec api.Object) api.ObjectReference { return rec.(*ipAllocation).Service },
		holders:    keyRoot + api.ServicesResource.Name + "/",
		newOwner:   func() api.Object { return &api.Service{} },
		holds:      func(o api.Object, ip string) bool { return o.(*api.Service).Spec.ClusterIP == ip },
	}
	return a, nil
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

// release frees ip if the Service of that uid holds it.
func (a *ipAllocator) release(ctx context.Context, ip, uid string) {
	if parsed := net.ParseIP(ip); parsed != nil && a.inRange(parsed) {
		a.rangeAllocator.release(ctx, parsed.To4().String(), uid)
	}
}
