package apiserver

import (
	"context"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// DefaultClusterCIDR is the range pod addresses come from, as k3s has it;
// each node gets a slice of DefaultNodeCIDRMaskSize bits (256 nodes of
// 254 pods).
const (
	DefaultClusterCIDR      = api.DefaultClusterCIDR
	DefaultNodeCIDRMaskSize = 24
)

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
