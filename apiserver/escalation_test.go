package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"minik8s/apiserver/authz"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage/etcd/etcdtest"
)

func subjects(user string) []api.Subject {
	return []api.Subject{{Kind: api.UserKind, APIGroup: api.RBACGroup, Name: user}}
}

func roleBinding(ns, name, kind, role, user string) *api.RoleBinding {
	return &api.RoleBinding{TypeMeta: api.TypeMeta{Kind: "RoleBinding"}, ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns},
		Subjects: subjects(user), RoleRef: api.RoleRef{APIGroup: api.RBACGroup, Kind: kind, Name: role}}
}

func clusterRoleBinding(name, kind, role, user string) *api.ClusterRoleBinding {
	return &api.ClusterRoleBinding{TypeMeta: api.TypeMeta{Kind: "ClusterRoleBinding"}, ObjectMeta: api.ObjectMeta{Name: name},
		Subjects: subjects(user), RoleRef: api.RoleRef{APIGroup: api.RBACGroup, Kind: kind, Name: role}}
}

// TestBindingsNeedTheirRole: a binding's writer must hold what the role it
// names grants (read from the store, a built-in one the store lacks
// included), or have bind on it; a role that is not there is NotFound, as
// Kubernetes answers, unless the writer may bind it.
func TestBindingsNeedTheirRole(t *testing.T) {
	s := New(Config{}, etcdtest.Start(t))
	ctx := context.Background()
	if _, err := s.registries[api.NamespacesResource.Name].Create(ctx, "", &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []api.Object{
		&api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "pod-reader"},
			Rules: []api.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		&api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "binds-future"},
			Rules: []api.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{api.RBACGroup}, Resources: []string{"clusterroles"}, ResourceNames: []string{"future"}}}},
		&api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "crb-writer"},
			Rules: []api.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{api.RBACGroup}, Resources: []string{"clusterrolebindings"}}}},
		&api.Role{ObjectMeta: api.ObjectMeta{Name: "local", Namespace: "team"},
			Rules: []api.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}},
	} {
		res := api.ClusterRolesResource
		if _, ok := o.(*api.Role); ok {
			res = api.RolesResource
		}
		if _, err := s.registries[res.Name].Create(ctx, o.GetObjectMeta().Namespace, o); err != nil {
			t.Fatal(err)
		}
	}
	s.authz = testAuthorizer(t,
		&api.ClusterRole{TypeMeta: api.TypeMeta{Kind: api.ClusterRoleKind}, ObjectMeta: api.ObjectMeta{Name: "binds-future"},
			Rules: []api.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{api.RBACGroup}, Resources: []string{"clusterroles"}, ResourceNames: []string{"future"}}}},
		&api.ClusterRole{TypeMeta: api.TypeMeta{Kind: api.ClusterRoleKind}, ObjectMeta: api.ObjectMeta{Name: "crb-writer"},
			Rules: []api.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{api.RBACGroup}, Resources: []string{"clusterrolebindings"}}}},
		roleBinding("team", "ns-admin", api.ClusterRoleKind, rbac.Admin, "nsadmin"),
		roleBinding("team", "binder", api.ClusterRoleKind, "binds-future", "nsadmin-binder"),
		roleBinding("team", "binder-admin", api.ClusterRoleKind, rbac.Admin, "nsadmin-binder"),
		clusterRoleBinding("crb-writer", api.ClusterRoleKind, "crb-writer", "crbwriter"),
	)
	nsadmin := rbac.User{Name: "nsadmin", Groups: []string{rbac.AllAuthenticated}}
	binder := rbac.User{Name: "nsadmin-binder", Groups: []string{rbac.AllAuthenticated}}
	crbWriter := rbac.User{Name: "crbwriter", Groups: []string{rbac.AllAuthenticated}}

	for _, tc := range []struct {
		name   string
		user   rbac.User
		obj    api.Object
		status int
		says   string
	}{
		{"a namespace admin binds a cluster role not there yet", nsadmin, roleBinding("team", "b", api.ClusterRoleKind, "future", "x"),
			http.StatusNotFound, `clusterroles.rbac.authorization.k8s.io "future" not found`},
		{"a namespace admin binds a role not there yet", nsadmin, roleBinding("team", "b", api.RoleKind, "future", "x"),
			http.StatusNotFound, `roles.rbac.authorization.k8s.io "future" not found`},
		{"a role of another namespace is not there", nsadmin, roleBinding("team", "b", api.RoleKind, "local-elsewhere", "x"),
			http.StatusNotFound, `roles.rbac.authorization.k8s.io "local-elsewhere" not found`},
		{"a namespace admin binds a cluster role it holds", nsadmin, roleBinding("team", "b", api.ClusterRoleKind, "pod-reader", "x"), 0, ""},
		{"a namespace admin binds a role of its namespace", nsadmin, roleBinding("team", "b", api.RoleKind, "local", "x"), 0, ""},
		{"a namespace admin binds edit, built in (not in the store)", nsadmin, roleBinding("team", "b", api.ClusterRoleKind, rbac.Edit, "x"), 0, ""},
		{"a namespace admin binds cluster-admin", nsadmin, roleBinding("team", "b", api.ClusterRoleKind, rbac.ClusterAdmin, "x"),
			http.StatusForbidden, `User "nsadmin" may not grant what it does not hold`},
		{"bind on the role: it may name one not there yet", binder, roleBinding("team", "b", api.ClusterRoleKind, "future", "x"), 0, ""},
		{"bind on another role does not count", binder, roleBinding("team", "b", api.ClusterRoleKind, "future2", "x"),
			http.StatusNotFound, `"future2" not found`},
		{"the admin binds what it likes", admin, roleBinding("team", "b", api.ClusterRoleKind, "future", "x"), 0, ""},
		{"a cluster binding of a cluster role not there", crbWriter, clusterRoleBinding("b", api.ClusterRoleKind, "future", "x"),
			http.StatusNotFound, `clusterroles.rbac.authorization.k8s.io "future" not found`},
		{"a cluster binding of pods cluster-wide, held in no namespace", crbWriter, clusterRoleBinding("b", api.ClusterRoleKind, "pod-reader", "x"),
			http.StatusForbidden, `get pods in API group ""`},
		{"a cluster binding names a Role", crbWriter, clusterRoleBinding("b", api.RoleKind, "local", "x"),
			http.StatusUnprocessableEntity, `roleRef.kind: "Role" is not supported: ClusterRole`},
		{"a binding names another kind", nsadmin, roleBinding("team", "b", "Group", "x", "x"),
			http.StatusUnprocessableEntity, `roleRef.kind: "Group" is not supported: Role or ClusterRole`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.obj.GetObjectMeta().Namespace
			err := s.noEscalation(rbac.WithUser(ctx, tc.user), ns, tc.obj)
			if tc.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if code, _ := errdefs.HTTPStatus(err); code != tc.status || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %d %v, want %d saying %q", code, err, tc.status, tc.says)
			}
		})
	}
}

// TestBootstrapBindingWithAnotherRole: a built-in binding found naming
// another role (which no update may change) is made again at start.
func TestBootstrapBindingWithAnotherRole(t *testing.T) {
	s := New(Config{}, etcdtest.Start(t))
	ctx := context.Background()
	crbs := s.registries[api.ClusterRoleBindingsResource.Name]
	bad := clusterRoleBinding(rbac.SystemNode, api.ClusterRoleKind, rbac.ClusterAdmin, "someone")
	bad.Annotations = map[string]string{rbac.AutoUpdateAnnotation: "true"}
	if _, err := crbs.Create(ctx, "", bad); err != nil {
		t.Fatal(err)
	}
	if err := authz.EnsureBootstrapPolicy(ctx, s.registries); err != nil {
		t.Fatal(err)
	}
	obj, err := crbs.Get(ctx, "", rbac.SystemNode)
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*api.ClusterRoleBinding); got.RoleRef.Name != rbac.SystemNode || len(got.Subjects) != 1 || got.Subjects[0].Name != rbac.NodesGroup {
		t.Errorf("the built-in binding is %+v", got)
	}
}
