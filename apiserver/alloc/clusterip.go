package alloc

import (
	"context"
	"encoding/binary"
	"net"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// ClusterIPPrefix is where allocated cluster IPs are recorded, one key per
// address. Creating the key is the allocation: etcd's create-if-absent
// makes it race-free across concurrent creates and across apiservers.
const ClusterIPPrefix = storage.KeyRoot + "ipallocations/"

// IPAllocation records which Service holds a cluster IP (its name is the
// IP) or a node port (its name is the port).
type IPAllocation struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata,omitempty"`
	Service        api.ObjectReference `json:"service"`
}

// ClusterIPs hands out the addresses of a service range.
type ClusterIPs struct {
	*Range
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

// NewClusterIPs is the allocator of the service range cidr.
func NewClusterIPs(store storage.Interface, cidr string) (*ClusterIPs, error) {
	n, err := ParseServiceCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ones, _ := n.Mask.Size()
	a := &ClusterIPs{cidr: n, first: binary.BigEndian.Uint32(n.IP.To4()) + 1}
	a.Range = &Range{cursor: &rangeCursor{},
		store: store, what: "cluster IP", kind: api.ServicesResource.Kind, rangeText: "service range " + n.String(),
		prefix: ClusterIPPrefix,
		// Without the range's network and broadcast addresses.
		size:       uint32(1)<<(32-ones) - 2,
		member:     a.ipAt,
		recordName: func(ip string) string { return ip },
		newRecord:  func(ip string, holder api.Object) api.Object { return a.record(ip, holder.(*api.Service)) },
		newEmpty:   func() api.Object { return &IPAllocation{} },
		holderOf:   func(rec api.Object) api.ObjectReference { return rec.(*IPAllocation).Service },
		holders:    storage.KeyRoot + api.ServicesResource.Name + "/",
		newOwner:   func() api.Object { return &api.Service{} },
		holds:      func(o api.Object, ip string) bool { return o.(*api.Service).Spec.ClusterIP == ip },
	}
	return a, nil
}

func (a *ClusterIPs) ipAt(i uint32) string {
	b := make(net.IP, 4)
	binary.BigEndian.PutUint32(b, a.first+i)
	return b.String()
}

// inRange reports whether ip is a usable address of the range.
func (a *ClusterIPs) inRange(ip net.IP) bool {
	v4 := ip.To4()
	if v4 == nil || !a.cidr.Contains(v4) {
		return false
	}
	i := binary.BigEndian.Uint32(v4) - a.first
	return i < a.size
}

func (a *ClusterIPs) record(ip string, svc *api.Service) *IPAllocation {
	now := time.Now().UTC().Truncate(time.Second)
	return &IPAllocation{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "IPAllocation"},
		ObjectMeta: api.ObjectMeta{Name: ip, CreationTimestamp: &now},
		Service:    api.ObjectReference{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID},
	}
}

// Canonical is the address asked, checked to be a usable one of the
// range, in canonical form.
func (a *ClusterIPs) Canonical(asked string) (string, error) {
	parsed := net.ParseIP(asked)
	if parsed == nil || !a.inRange(parsed) {
		return "", errdefs.Invalid("spec.clusterIP", "%s is not in the service range %s", asked, a.cidr)
	}
	return parsed.To4().String(), nil
}

// Release frees ip if the Service of that uid holds it.
func (a *ClusterIPs) Release(ctx context.Context, ip, uid string) {
	if parsed := net.ParseIP(ip); parsed != nil && a.inRange(parsed) {
		a.Range.Release(ctx, parsed.To4().String(), uid)
	}
}

// DryRun is the allocator over a dry run of its store.
func (a *ClusterIPs) DryRun() *ClusterIPs {
	d := *a
	d.Range = a.Range.DryRun()
	return &d
}
