package registry

import (
	"context"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/auth"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// nodeStrategy allocates a Node its pod CIDR on create (when the cluster
// has a pod range), keeps it on update, and frees it and the Node's
// password record on delete.
type nodeStrategy struct{ defaultStrategy }

func (nodeStrategy) create(ctx context.Context, r *Store, key string, obj api.Object) error {
	if r.PodCIDRs == nil {
		return r.Storage.Create(ctx, key, obj, r.TTL)
	}
	return r.createNode(ctx, key, obj.(*api.Node))
}

func (nodeStrategy) prepareForUpdate(r *Store, cur, next api.Object) error {
	return r.keepPodCIDR(cur, next)
}

func (nodeStrategy) afterDelete(ctx context.Context, r *Store, obj api.Object) {
	r.releasePodCIDR(ctx, obj)
	auth.Release(ctx, r.Storage, obj.(*api.Node).Name)
}

// createNode stores a Node with its pod CIDR: the one it asks for if that
// is a free slice of the range, else the next free one.
func (r *Store) createNode(ctx context.Context, key string, node *api.Node) error {
	a := r.PodCIDRs
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
	return a.Create(ctx, key, node, r.TTL, asked, "spec.podCIDR", func(cidr string) { setPodCIDR(node, cidr) })
}

func setPodCIDR(node *api.Node, cidr string) {
	node.Spec.PodCIDR, node.Spec.PodCIDRs = cidr, nil
	if cidr != "" {
		node.Spec.PodCIDRs = []string{cidr}
	}
}

// keepPodCIDR makes an update keep the Node's pod CIDR: an empty one keeps
// it, any other change is refused, as Kubernetes refuses it.
func (r *Store) keepPodCIDR(cur, next api.Object) error {
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
func (r *Store) releasePodCIDR(ctx context.Context, obj api.Object) {
	if node, ok := obj.(*api.Node); ok && r.PodCIDRs != nil && node.Spec.PodCIDR != "" {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		r.PodCIDRs.Release(rctx, node.Spec.PodCIDR, node.UID)
	}
}

// AssignMissingPodCIDRs gives a slice to each Node that has none (one
// registered before the cluster had a pod range): the slice's record
// first, then the Node, the record taken back if the Node changed.
func (r *Store) AssignMissingPodCIDRs(ctx context.Context) error {
	a := r.PodCIDRs
	objs, _, err := r.Storage.List(ctx, r.Prefix(""), r.Resource.New)
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
		_, err = r.Mutate(ctx, "", node.Name, func(cur api.Object) (api.Object, error) {
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
