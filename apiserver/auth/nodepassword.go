package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// A node name is bound to a password, as k3s binds it: the kubelet makes a
// random one at its first join and keeps it in its root dir, and the
// apiserver keeps its hash per node name, bound by the first request for
// that name's credentials. Credentials for a name are refused without its
// password, and for a name whose Node exists without a password (minik8s
// up's own node, one an admin made) unless the caller is that node, with
// its own certificate. The record also binds the one address the node's
// serving certificates may name.
//
// The records live in the store beside the allocation records, outside
// the API: no user reads or writes them, the admin included, and only the
// apiserver reaches etcd. They go with their Node, as the pod CIDR does
// (k3s deletes a deleted node's password secret): that is how an operator
// lets a reinstalled node, or one that moved to another address, join
// again under its name.

// nodePasswordPrefix is where the records are, one key per node name.
const nodePasswordPrefix = storage.KeyRoot + "nodepasswords/"

// NodePassword is a node name's record.
type NodePassword struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata,omitempty"`
	// Hash is "sha256:" and the hex SHA-256 of the password. The password
	// is 256 random bits (at least MinNodePassword characters are asked
	// for): a slow hash would add nothing against guessing it.
	Hash string `json:"hash"`
	// Address is the node address bound to the name: the only one its
	// serving certificates name. Empty until a serving certificate is
	// asked for.
	Address string `json:"address,omitempty"`
}

// MinNodePassword and MaxNodePassword bound a node password's length: the
// kubelet sends 64 hex digits.
const (
	MinNodePassword = 32
	MaxNodePassword = 512
)

// NodePasswords keeps the records in store; nodes reads the Nodes.
type NodePasswords struct {
	store storage.Interface
	nodes Objects
}

// NewNodePasswords is the records in store, nodes answering for the Nodes.
func NewNodePasswords(store storage.Interface, nodes Objects) *NodePasswords {
	return &NodePasswords{store: store, nodes: nodes}
}

func hashNodePassword(password string) string {
	sum := sha256.Sum256([]byte(password))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func nodePasswordKey(name string) string { return nodePasswordPrefix + name }

// record reads name's record; nil when there is none.
func (p *NodePasswords) record(ctx context.Context, name string) (*NodePassword, error) {
	rec := &NodePassword{}
	err := p.store.Get(ctx, nodePasswordKey(name), rec)
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// Check refuses a request for name's credentials that does
// not prove name: a password other than its record's, or, when there is
// no record, a Node of that name the caller is not (self: it asks with
// name's own certificate). It returns the record, nil when there is none
// yet (Bind makes it once every check has passed).
func (p *NodePasswords) Check(ctx context.Context, name, password string, self bool) (*NodePassword, error) {
	rec, err := p.record(ctx, name)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hashNodePassword(password))) != 1 {
			return nil, fmt.Errorf("node %q is forbidden: its node password is not the one it joined with (the node's root dir keeps it, in node-password); "+
				"if the node was reinstalled, an admin deletes the Node (kubectl delete node %s) so that it may join again: %w", name, name, errdefs.ErrForbidden)
		}
		return rec, nil
	}
	if self {
		return nil, nil
	}
	if _, err := p.nodes.Get(ctx, api.NodesResource, "", name); err == nil {
		return nil, fmt.Errorf("node %q is forbidden: a Node of that name exists and did not join with the node token (it has no node password), "+
			"so no credentials are issued for it; to let a node join under that name, an admin deletes the Node first: %w", name, errdefs.ErrForbidden)
	} else if !errdefs.IsNotFound(err) {
		return nil, err
	}
	return nil, nil
}

// Bind records name's password and address (ip, when the
// request asks for a serving certificate) if rec, the record checked, has
// not: the first request binds them. Two first requests racing each other
// are decided by etcd's create-if-absent; the loser is checked against the
// winner's record.
func (p *NodePasswords) Bind(ctx context.Context, rec *NodePassword, name, password string, ip net.IP) error {
	addr := ""
	if ip != nil {
		addr = ip.String()
	}
	if rec == nil {
		rec = &NodePassword{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "NodePassword"}, ObjectMeta: api.ObjectMeta{Name: name},
			Hash: hashNodePassword(password), Address: addr}
		err := p.store.Create(ctx, nodePasswordKey(name), rec, 0)
		if !errdefs.IsAlreadyExists(err) {
			return err
		}
		won, err := p.Check(ctx, name, password, true)
		if err != nil {
			return err
		}
		return p.Bind(ctx, won, name, password, ip)
	}
	if addr == "" || rec.Address == addr {
		return nil
	}
	if rec.Address != "" {
		return BoundElsewhere(name, rec.Address, addr)
	}
	_, err := p.store.GuaranteedUpdate(ctx, nodePasswordKey(name), func() api.Object { return &NodePassword{} }, func(cur api.Object) (api.Object, error) {
		c := cur.(*NodePassword)
		if c.Hash != rec.Hash {
			return nil, fmt.Errorf("node %q: its node password changed meanwhile: %w", name, errdefs.ErrConflict)
		}
		if c.Address != "" && c.Address != addr {
			return nil, BoundElsewhere(name, c.Address, addr)
		}
		c.Address = addr
		return c, nil
	})
	return err
}

// BoundElsewhere refuses name a serving certificate for asked: it is
// bound to the address bound.
func BoundElsewhere(name, bound, asked string) error {
	return fmt.Errorf("node %q is forbidden a serving certificate for %s: the node is bound to %s since its first join; "+
		"to move it, an admin deletes the Node (kubectl delete node %s) and it joins again: %w", name, asked, bound, name, errdefs.ErrForbidden)
}

// Release drops a deleted Node's record (see above), through store (the
// registry's, a dry run's when it is one).
func Release(ctx context.Context, store storage.Interface, node string) {
	err := store.Delete(context.WithoutCancel(ctx), nodePasswordKey(node), &NodePassword{}, "")
	if err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("node", node).Warn("releasing the node password")
	}
}

// Named is the name of the node whose record binds address ip; "" for
// none.
func (p *NodePasswords) Named(ctx context.Context, ip net.IP) (string, error) {
	recs, _, err := p.store.List(ctx, nodePasswordPrefix, func() api.Object { return &NodePassword{} })
	if err != nil {
		return "", err
	}
	for _, o := range recs {
		if rec := o.(*NodePassword); rec.Address != "" && ip.Equal(net.ParseIP(rec.Address)) {
			return rec.Name, nil
		}
	}
	return "", nil
}
