package alloc

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// podCIDRPrefix is where allocated pod CIDRs are recorded, one key per
// slice, named "10.42.3.0-24".
const podCIDRPrefix = storage.KeyRoot + "podcidrallocations/"

// podCIDRAllocation records which Node holds a pod CIDR.
type podCIDRAllocation struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata,omitempty"`
	Node           api.ObjectReference `json:"node"`
}

// PodCIDRs hands out the node slices of the cluster's pod range.
type PodCIDRs struct {
	*Range
	cidr  *net.IPNet
	mask  int
	first uint32
}

// ParseClusterCIDR checks the pod range and the size of a node's slice:
// IPv4, the slice inside the range and with room for pods.
func ParseClusterCIDR(cidr string, nodeMask int) (*net.IPNet, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, errdefs.Invalid("cluster-cidr", "%q is not a CIDR range: %v", cidr, err)
	}
	ones, bits := n.Mask.Size()
	if n.IP.To4() == nil || bits != 32 {
		return nil, errdefs.Invalid("cluster-cidr", "%q is not an IPv4 range", cidr)
	}
	if nodeMask < ones || nodeMask > 30 {
		return nil, errdefs.Invalid("node-cidr-mask-size", "%d must be between the cluster range's /%d and /30", nodeMask, ones)
	}
	if nodeMask-ones > 16 {
		return nil, errdefs.Invalid("node-cidr-mask-size", "/%d cuts %s into more than 65536 node slices", nodeMask, cidr)
	}
	return n, nil
}

// NewPodCIDRs is the allocator of /nodeMask slices of the pod range cidr.
func NewPodCIDRs(store storage.Interface, cidr string, nodeMask int) (*PodCIDRs, error) {
	n, err := ParseClusterCIDR(cidr, nodeMask)
	if err != nil {
		return nil, err
	}
	ones, _ := n.Mask.Size()
	a := &PodCIDRs{cidr: n, mask: nodeMask, first: binary.BigEndian.Uint32(n.IP.To4())}
	a.Range = &Range{cursor: &rangeCursor{},
		store: store, what: "pod CIDR", kind: api.NodesResource.Kind, rangeText: "cluster range " + n.String(),
		prefix:     podCIDRPrefix,
		size:       uint32(1) << (nodeMask - ones),
		member:     a.sliceAt,
		recordName: func(cidr string) string { return strings.Replace(cidr, "/", "-", 1) },
		newRecord:  func(cidr string, holder api.Object) api.Object { return a.record(cidr, holder.(*api.Node)) },
		newEmpty:   func() api.Object { return &podCIDRAllocation{} },
		holderOf:   func(rec api.Object) api.ObjectReference { return rec.(*podCIDRAllocation).Node },
		holders:    storage.KeyRoot + api.NodesResource.Name + "/",
		newOwner:   func() api.Object { return &api.Node{} },
		holds: func(o api.Object, name string) bool {
			return strings.Replace(o.(*api.Node).Spec.PodCIDR, "/", "-", 1) == name
		},
	}
	return a, nil
}

func (a *PodCIDRs) sliceAt(i uint32) string {
	b := make(net.IP, 4)
	binary.BigEndian.PutUint32(b, a.first+i<<(32-a.mask))
	return (&net.IPNet{IP: b, Mask: net.CIDRMask(a.mask, 32)}).String()
}

// slice is cidr in canonical form if it is one of the range's slices.
func (a *PodCIDRs) slice(cidr string) (string, bool) {
	ip, n, err := net.ParseCIDR(cidr)
	if err != nil || ip.To4() == nil || !ip.Equal(n.IP) || !a.cidr.Contains(n.IP) {
		return "", false
	}
	if ones, _ := n.Mask.Size(); ones != a.mask {
		return "", false
	}
	return n.String(), true
}

func (a *PodCIDRs) record(cidr string, node *api.Node) *podCIDRAllocation {
	now := time.Now().UTC().Truncate(time.Second)
	return &podCIDRAllocation{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "PodCIDRAllocation"},
		ObjectMeta: api.ObjectMeta{Name: a.recordName(cidr), CreationTimestamp: &now},
		Node:       api.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID},
	}
}

// Canonical is the slice asked, checked to be one of the range's, in
// canonical form.
func (a *PodCIDRs) Canonical(asked string) (string, error) {
	m, ok := a.slice(asked)
	if !ok {
		return "", errdefs.Invalid("spec.podCIDR", "%s is not a /%d slice of the cluster range %s", asked, a.mask, a.cidr)
	}
	return m, nil
}

// Release frees the slice cidr if the Node of that uid holds it.
func (a *PodCIDRs) Release(ctx context.Context, cidr, uid string) {
	if m, ok := a.slice(cidr); ok {
		a.Range.Release(ctx, m, uid)
	}
}

// Reserve records the first free slice as node's, for a Node stored
// without one; "" when none is left. The caller gives the Node the slice,
// or releases it.
func (a *PodCIDRs) Reserve(ctx context.Context, node *api.Node) (string, error) {
	used, err := a.Used(ctx)
	if err != nil {
		return "", err
	}
	for i := uint32(0); i < a.size; i++ {
		cidr := a.sliceAt(i)
		if used[a.recordName(cidr)] {
			continue
		}
		err := a.store.Create(ctx, a.prefix+a.recordName(cidr), a.record(cidr, node), 0)
		if errdefs.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		return cidr, nil
	}
	return "", nil
}

// DryRun is the allocator over a dry run of its store.
func (a *PodCIDRs) DryRun() *PodCIDRs {
	d := *a
	d.Range = a.Range.DryRun()
	return &d
}
