package apiserver

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
const nodePasswordPrefix = keyRoot + "nodepasswords/"

// nodePassword is a node name's record.
type nodePassword struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata,omitempty"`
	// Hash is "sha256:" and the hex SHA-256 of the password. The password
	// is 256 random bits (at least minNodePassword characters are asked
	// for): a slow hash would add nothing against guessing it.
	Hash string `json:"hash"`
	// Address is the node address bound to the name: the only one its
	// serving certificates name. Empty until a serving certificate is
	// asked for.
	Address string `json:"address,omitempty"`
}

// minNodePassword and maxNodePassword bound a node password's length: the
// kubelet sends 64 hex digits.
const (
	minNodePassword = 32
	maxNodePassword = 512
)

func hashNodePassword(password string) string {
	sum := sha256.Sum256([]byte(password))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func nodePasswordKey(name string) string { return nodePasswordPrefix + name }

// nodePasswordRecord reads name's record; nil when there is none.
func (s *Server) nodePasswordRecord(ctx context.Context, name string) (*nodePassword, error) {
	rec := &nodePassword{}
	err := s.store.Get(ctx, nodePasswordKey(name), rec)
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// checkNodePassword refuses a request for name's credentials that does
// not prove name: a password other than its record's, or, when there is
// no record, a Node of that name the caller is not (self: it asks with
// name's own certificate). It returns the record, nil when there is none
// yet (bindNodePassword makes it once every check has passed).
func (s *Server) checkNodePassword(ctx context.Context, name, password string, self bool) (*nodePassword, error) {
	rec, err := s.nodePasswordRecord(ctx, name)
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
	if _, err := s.registries[api.NodesResource.Name].get(ctx, "", name); err == nil {
		return nil, fmt.Errorf("node %q is forbidden: a Node of that name exists and did not join with the node token (it has no node password), "+
			"so no credentials are issued for it; to let a node join under that name, an admin deletes the Node first: %w", name, errdefs.ErrForbidden)
	} else if !errdefs.IsNotFound(err) {
		return nil, err
	}
	return nil, nil
}

// bindNodePassword records name's password and address (ip, when the
// request asks for a serving certificate) if rec, the record checked, has
// not: the first request binds them. Two first requests racing each other
// are decided by etcd's create-if-absent; the loser is checked against the
// winner's record.
func (s *Server) bindNodePassword(ctx context.Context, rec *nodePassword, name, password string, ip net.IP) error {
	addr := ""
	if ip != nil {
		addr = ip.String()
	}
	if rec == nil {
		rec = &nodePassword{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "NodePassword"}, ObjectMeta: api.ObjectMeta{Name: name},
			Hash: hashNodePassword(password), Address: addr}
		err := s.store.Create(ctx, nodePasswordKey(name), rec, 0)
		if !errdefs.IsAlreadyExists(err) {
			return err
		}
		won, err := s.checkNodePassword(ctx, name, password, true)
		if err != nil {
			return err
		}
		return s.bindNodePassword(ctx, won, name, password, ip)
	}
	if addr == "" || rec.Address == addr {
		return nil
	}
	if rec.Address != "" {
		return boundElsewhere(name, rec.Address, addr)
	}
	_, err := s.store.GuaranteedUpdate(ctx, nodePasswordKey(name), func() api.Object { return &nodePassword{} }, func(cur api.Object) (api.Object, error) {
		c := cur.(*nodePassword)
		if c.Hash != rec.Hash {
			return nil, fmt.Errorf("node %q: its node password changed meanwhile: %w", name, errdefs.ErrConflict)
		}
		if c.Address != "" && c.Address != addr {
			return nil, boundElsewhere(name, c.Address, addr)
		}
		c.Address = addr
		return c, nil
	})
	return err
}

func boundElsewhere(name, bound, asked string) error {
	return fmt.Errorf("node %q is forbidden a serving certificate for %s: the node is bound to %s since its first join; "+
		"to move it, an admin deletes the Node (kubectl delete node %s) and it joins again: %w", name, asked, bound, name, errdefs.ErrForbidden)
}

// releaseNodePassword drops a deleted Node's record (see above).
func (r *registry) releaseNodePassword(ctx context.Context, obj api.Object) {
	node, ok := obj.(*api.Node)
	if !ok {
		return
	}
	err := r.store.Delete(context.WithoutCancel(ctx), nodePasswordKey(node.Name), &nodePassword{}, "")
	if err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("node", node.Name).Warn("releasing the node password")
	}
}
