package apiserver

import (
	"context"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/auth"
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

// nodeStrategy allocates a Node its pod CIDR on create (when the cluster
// has a pod range), keeps it on update, and frees it and the Node's
// password record on delete.
type nodeStrategy struct{ defaultStrategy }

func (nodeStrategy) create(ctx context.Context, r *registry, key string, obj api.Object) error {
	if r.podCIDRs == nil {
		return r.store.Create(ctx, key, obj, r.ttl)
	}
	return r.createNode(ctx, key, obj.(*api.Node))
}

func (nodeStrategy) prepareForUpdate(r *registry, cur, next api.Object) error {
	return r.keepPodCIDR(cur, next)
}

func (nodeStrategy) afterDelete(ctx context.Context, r *registry, obj api.Object) {
	r.releasePodCIDR(ctx, obj)
	auth.Release(ctx, r.store, obj.(*api.Node).Name)
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
		var err error
		if asked, err = a.Canonical(asked); err != nil {
			return err
		}
	}
	return a.Create(ctx, key, node, r.ttl, asked, "spec.podCIDR", func(cidr string) { setPodCIDR(node, cidr) })
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
		r.podCIDRs.Release(rctx, node.Spec.PodCIDR, node.UID)
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
		cidr, err := a.Reserve(ctx, node)
		if err != nil {
			return err
		}
		if cidr == "" {
			continue
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
			a.Release(ctx, cidr, node.UID)
		} else {
			log.WithFields(log.Fields{"node": node.Name, "podCIDR": cidr}).Info("gave a registered node its pod CIDR")
		}
	}
	return nil
}
