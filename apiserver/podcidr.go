package apiserver

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// DefaultClusterCIDR is the range pod addresses come from, as k3s has it;
// each node gets a slice of DefaultNodeCIDRMaskSize bits (256 nodes of
// 254 pods).
const (
	DefaultClusterCIDR      = api.DefaultClusterCIDR
	DefaultNodeCIDRMaskSize = 24
)

// podCIDRAllocPrefix is where allocated pod CIDRs are recorded, one key per
// slice, named "10.42.3.0-24".
const podCIDRAllocPrefix = keyRoot + "podcidrallocations/"

// podCIDRAllocation records which Node holds a pod CIDR.
type podCIDRAllocation struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata,omitempty"`
	Node           api.ObjectReference `json:"node"`
}

// podCIDRAllocator hands out the node slices of the cluster's pod range.
type podCIDRAllocator struct {
	*rangeAllocator
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

func newPodCIDRAllocator(store storage.Interface, cidr string, nodeMask int) (*podCIDRAllocator, error) {
	n, err := ParseClusterCIDR(cidr, nodeMask)
	if err != nil {
		return nil, err
	}
	ones, _ := n.Mask.Size()
	a := &podCIDRAllocator{cidr: n, mask: nodeMask, first: binary.BigEndian.Uint32(n.IP.To4())}
	a.rangeAllocator = &rangeAllocator{cursor: &rangeCursor{},
		store: store, what: "pod CIDR", kind: api.NodesResource.Kind, rangeText: "cluster range " + n.String(),
		prefix:     podCIDRAllocPrefix,
		size:       uint32(1) << (nodeMask - ones),
		member:     a.sliceAt,
		recordName: func(cidr string) string { return strings.Replace(cidr, "/", "-", 1) },
		newRecord:  func(cidr string, holder api.Object) api.Object { return a.record(cidr, holder.(*api.Node)) },
		newEmpty:   func() api.Object { return &podCIDRAllocation{} },
		holderOf:   func(rec api.Object) api.ObjectReference { return rec.(*podCIDRAllocation).Node },
		holders:    keyRoot + api.NodesResource.Name + "/",
		newOwner:   func() api.Object { return &api.Node{} },
		holds: func(o api.Object, name string) bool {
			return strings.Replace(o.(*api.Node).Spec.PodCIDR, "/", "-", 1) == name
		},
	}
	return a, nil
}

func (a *podCIDRAllocator) sliceAt(i uint32) string {
	b := make(net.IP, 4)
	binary.BigEndian.PutUint32(b, a.first+i<<(32-a.mask))
	return (&net.IPNet{IP: b, Mask: net.CIDRMask(a.mask, 32)}).String()
}

// slice is cidr in canonical form if it is one of the range's slices.
func (a *podCIDRAllocator) slice(cidr string) (string, bool) {
	ip, n, err := net.ParseCIDR(cidr)
	if err != nil || ip.To4() == nil || !ip.Equal(n.IP) || !a.cidr.Contains(n.IP) {
		return "", false
	}
	if ones, _ := n.Mask.Size(); ones != a.mask {
		return "", false
	}
	return n.String(), true
}

func (a *podCIDRAllocator) record(cidr string, node *api.Node) *podCIDRAllocation {
	now := time.Now().UTC().Truncate(time.Second)
	return &podCIDRAllocation{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "PodCIDRAllocation"},
		ObjectMeta: api.ObjectMeta{Name: a.recordName(cidr), CreationTimestamp: &now},
		Node:       api.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID},
	}
}

// createNode stores a Node with its pod CIDR: the one it asks for if that
// is a free slice of the range, else the next free one.
func (r *registry) createNode(ctx context.Context, key string, node *api.Node) error {
	a := r.podCIDRs
	asked := node.Spec.PodCIDR
	if asked == "" && len(node.Spec.PodCIDRs) > 0 {
		asked = node.Spec.PodCIDRs[0]
	}
	if asked != "" {
		m, ok := a.slice(asked)
		if !ok {
			return errdefs.Invalid("spec.podCIDR", "%s is not a /%d slice of the cluster range %s", asked, a.mask, a.cidr)
		}
		asked = m
	}
	return a.create(ctx, key, node, r.ttl, asked, "spec.podCIDR", func(cidr string) { setPodCIDR(node, cidr) })
}

func setPodCIDR(node *api.Node, cidr string) {
	node.Spec.PodCIDR, node.Spec.PodCIDRs = cidr, nil
	if cidr != "" {
		node.Spec.PodCIDRs = []string{cidr}
	}
}

// keepPodCIDR makes an update keep the Node's pod CIDR: an empty one keeps
// it, any other change is refused, as Kubernetes refuses it.
func (r *registry) keepPodCIDR(cur, next api.Object) error {
	c, ok := cur.(*api.Node)
	if !ok {
		return nil
	}
	n := next.(*api.Node)
	if n.Spec.PodCIDR == "" && len(n.Spec.PodCIDRs) == 0 {
		setPodCIDR(n, c.Spec.PodCIDR)
	}
	if n.Spec.PodCIDR != c.Spec.PodCIDR || len(n.Spec.PodCIDRs) > 1 || (len(n.Spec.PodCIDRs) == 1 && n.Spec.PodCIDRs[0] != c.Spec.PodCIDR) {
		return errdefs.Invalid("spec.podCIDR", "field is immutable once set (is %q, asked %q)", c.Spec.PodCIDR, n.Spec.PodCIDR)
	}
	return nil
}

// releasePodCIDR frees the slice of a deleted Node.
func (r *registry) releasePodCIDR(ctx context.Context, obj api.Object) {
	if node, ok := obj.(*api.Node); ok && r.podCIDRs != nil && node.Spec.PodCIDR != "" {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if m, ok := r.podCIDRs.slice(node.Spec.PodCIDR); ok {
			r.podCIDRs.release(rctx, m, node.UID)
		}
	}
}

// assignMissingPodCIDRs gives a slice to each Node that has none (one
// registered before the cluster had a pod range): the slice's record
// first, then the Node, the record taken back if the Node changed.
func (r *registry) assignMissingPodCIDRs(ctx context.Context) error {
	a := r.podCIDRs
	objs, _, err := r.store.List(ctx, r.prefix(""), r.res.New)
	if err != nil {
		return err
	}
	for _, o := range objs {
		node := o.(*api.Node)
		if node.Spec.PodCIDR != "" {
			continue
		}
		used, err := a.used(ctx)
		if err != nil {
			return err
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
				return err
			}
			_, err = r.mutate(ctx, "", node.Name, func(cur api.Object) (api.Object, error) {
				n := cur.(*api.Node)
				if n.UID != node.UID || n.Spec.PodCIDR != "" {
					return nil, errdefs.ErrConflict
				}
				setPodCIDR(n, cidr)
				return n, nil
			})
			if err != nil {
				a.release(ctx, cidr, node.UID)
			} else {
				log.WithFields(log.Fields{"node": node.Name, "podCIDR": cidr}).Info("gave a registered node its pod CIDR")
			}
			break
		}
	}
	return nil
}
