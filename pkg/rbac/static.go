package rbac

import (
	"fmt"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Static is a Source over a fixed set of objects: for tests, for checking
// the bootstrap policy, and for callers without informers. Build it with
// NewStatic; it is not safe to Add to while Authorize reads it.
type Static struct {
	roles               map[string][]*api.Role
	roleBindings        map[string][]*api.RoleBinding
	clusterRoles        []*api.ClusterRole
	clusterRoleBindings []*api.ClusterRoleBinding
}

var _ Source = (*Static)(nil)

// NewStatic holds objs, each a *api.Role, *api.ClusterRole,
// *api.RoleBinding or *api.ClusterRoleBinding.
func NewStatic(objs ...api.Object) (*Static, error) {
	s := &Static{roles: map[string][]*api.Role{}, roleBindings: map[string][]*api.RoleBinding{}}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add holds one more object; any other kind than the four RBAC ones is
// refused with errdefs.ErrInvalid.
func (s *Static) Add(o api.Object) error {
	switch o := o.(type) {
	case *api.Role:
		s.roles[o.Namespace] = append(s.roles[o.Namespace], o)
	case *api.RoleBinding:
		s.roleBindings[o.Namespace] = append(s.roleBindings[o.Namespace], o)
	case *api.ClusterRole:
		s.clusterRoles = append(s.clusterRoles, o)
	case *api.ClusterRoleBinding:
		s.clusterRoleBindings = append(s.clusterRoleBindings, o)
	default:
		return errdefs.Invalid("kind", "%s is not an RBAC kind", fmt.Sprintf("%T", o))
	}
	return nil
}

func (s *Static) Roles(namespace string) []*api.Role               { return s.roles[namespace] }
func (s *Static) ClusterRoles() []*api.ClusterRole                 { return s.clusterRoles }
func (s *Static) RoleBindings(namespace string) []*api.RoleBinding { return s.roleBindings[namespace] }
func (s *Static) ClusterRoleBindings() []*api.ClusterRoleBinding   { return s.clusterRoleBindings }

func (s *Static) Role(namespace, name string) *api.Role {
	for _, r := range s.roles[namespace] {
		if r.Name == name {
			return r
		}
	}
	return nil
}

func (s *Static) ClusterRole(name string) *api.ClusterRole {
	for _, r := range s.clusterRoles {
		if r.Name == name {
			return r
		}
	}
	return nil
}
