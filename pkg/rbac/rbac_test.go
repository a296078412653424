package rbac

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func authn(name string, groups ...string) User {
	return User{Name: name, Groups: append(groups, AllAuthenticated)}
}

var anonymous = User{Name: Anonymous, Groups: []string{AllUnauthenticated}}

// req is a resource request; resource may be "resource/subresource".
func req(u User, verb, group, resource, ns, name string) Attributes {
	res, sub, _ := strings.Cut(resource, "/")
	return Attributes{User: u, Verb: verb, APIGroup: group, Resource: res, Subresource: sub,
		Namespace: ns, Name: name, ResourceRequest: true}
}

func nonResource(u User, verb, path string) Attributes {
	return Attributes{User: u, Verb: verb, Path: path}
}

func role(ns, name string, rules ...api.PolicyRule) *api.Role {
	return &api.Role{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func roleBinding(ns, name, kind, roleName string, subjects ...api.Subject) *api.RoleBinding {
	return &api.RoleBinding{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name}, Subjects: subjects,
		RoleRef: api.RoleRef{APIGroup: api.RBACGroup, Kind: kind, Name: roleName}}
}

func bindClusterRole(name, roleName string, subjects ...api.Subject) *api.ClusterRoleBinding {
	b := clusterRoleBinding(roleName, subjects...)
	b.Name = name
	return b
}

func serviceAccount(ns, name string) api.Subject {
	return api.Subject{Kind: api.ServiceAccountKind, Namespace: ns, Name: name}
}

// testSource is the bootstrap policy plus a few roles and bindings of a
// user's making.
func testSource(t *testing.T) *Static {
	t.Helper()
	roles, bindings := BootstrapPolicy()
	var objs []api.Object
	for _, r := range roles {
		objs = append(objs, r)
	}
	for _, b := range bindings {
		objs = append(objs, b)
	}
	objs = append(objs,
		bindClusterRole("viewers", View, user("victor")),
		clusterRole("metrics-reader", api.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/debug/*"}}),
		clusterRoleBinding("metrics-reader", user("mona")),
		roleBinding("dev", "dev-edit", api.ClusterRoleKind, Edit, user("alice")),
		role("dev", "pod-reader",
			rule([]string{"get", "list", "watch"}, groups(""), "pods"),
			rule([]string{"get"}, groups(""), "pods/log")),
		roleBinding("dev", "bob-reads", api.RoleKind, "pod-reader", user("bob")),
		// A RoleBinding in prod naming a Role that exists only in dev.
		roleBinding("prod", "bob-prod", api.RoleKind, "pod-reader", user("bob")),
		role("dev", "one-config", api.PolicyRule{Verbs: []string{"get", "update", "list"}, APIGroups: []string{""},
			Resources: []string{"configmaps"}, ResourceNames: []string{"app-config"}}),
		roleBinding("dev", "team-a-config", api.RoleKind, "one-config", group("team-a")),
		roleBinding("dev", "sa-view", api.ClusterRoleKind, View, serviceAccount("", "builder"), serviceAccount("ci", "deployer")),
		role("dev", "scaler", rule([]string{"update"}, groups("*"), "*/scale")),
		roleBinding("dev", "sam-scales", api.RoleKind, "scaler", user("sam")),
		role("dev", "pods-star", rule([]string{"get"}, groups(""), "pods/*")),
		roleBinding("dev", "pat-pods-star", api.RoleKind, "pods-star", user("pat")),
	)
	s, err := NewStatic(objs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAuthorize(t *testing.T) {
	src := testSource(t)
	root := authn("root", Masters)
	victor := authn("victor")
	alice := authn("alice")
	bob := authn("bob")
	carol := authn("carol", "team-a")
	builder := authn(ServiceAccountUsername("dev", "builder"), ServiceAccountGroups("dev")...)
	builderProd := authn(ServiceAccountUsername("prod", "builder"), ServiceAccountGroups("prod")...)
	deployer := authn(ServiceAccountUsername("ci", "deployer"), ServiceAccountGroups("ci")...)
	sam := authn("sam")
	pat := authn("pat")
	mona := authn("mona")

	cases := []struct {
		name   string
		a      Attributes
		allow  bool
		reason string // a part of the reason when allowed
	}{
		// cluster-admin
		{"admin deletes nodes", req(root, "delete", "", "nodes", "", "n1"), true,
			`RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`},
		{"admin reads secrets anywhere", req(root, "list", "", "secrets", "", ""), true, "cluster-admin"},
		{"admin any group and subresource", req(root, "create", "made.up", "things/sub", "x", "y"), true, "cluster-admin"},
		{"admin any path", nonResource(root, "post", "/anything/at/all"), true, "cluster-admin"},
		{"masters group needed", req(authn("mallory"), "get", "", "pods", "dev", "web"), false, ""},

		// view bound cluster-wide
		{"view reads pods", req(victor, "list", "", "pods", "", ""), true,
			`ClusterRoleBinding "viewers" of ClusterRole "view" to User "victor"`},
		{"view reads replicasets", req(victor, "watch", "apps", "replicasets", "dev", ""), true, "view"},
		{"view reads funcs in minik8s.io", req(victor, "get", FuncGroup, "funcs", "dev", "f"), true, "view"},
		{"view reads funcs in core", req(victor, "get", "", "funcs", "dev", "f"), true, "view"},
		{"view reads leases", req(victor, "get", "coordination.k8s.io", "leases", "dev", "l"), true, "view"},
		{"view reads pod logs", req(victor, "get", "", "pods/log", "dev", "web"), true, "view"},
		{"view cannot read secrets", req(victor, "get", "", "secrets", "dev", "s"), false, ""},
		{"view cannot list secrets", req(victor, "list", "", "secrets", "", ""), false, ""},
		{"view cannot create pods", req(victor, "create", "", "pods", "dev", ""), false, ""},
		{"view cannot delete funcs", req(victor, "delete", FuncGroup, "funcs", "dev", "f"), false, ""},
		{"view cannot invoke", req(victor, "create", FuncGroup, "funcs/invoke", "dev", "f"), false, ""},
		{"view cannot exec", req(victor, "create", "", "pods/exec", "dev", "web"), false, ""},
		{"view cannot read roles", req(victor, "list", api.RBACGroup, "roles", "dev", ""), false, ""},

		// a RoleBinding to a ClusterRole grants in its namespace only
		{"edit in dev creates pods", req(alice, "create", "", "pods", "dev", ""), true,
			`RBAC: allowed by RoleBinding "dev-edit/dev" of ClusterRole "edit" to User "alice"`},
		{"edit writes secrets", req(alice, "update", "", "secrets", "dev", "s"), true, "dev-edit"},
		{"edit reads secrets", req(alice, "get", "", "secrets", "dev", "s"), true, "dev-edit"},
		{"edit invokes", req(alice, "create", FuncGroup, "funcs/invoke", "dev", "f"), true, "dev-edit"},
		{"edit execs in pods", req(alice, "create", "", "pods/exec", "dev", "web"), true, "dev-edit"},
		{"edit reads endpoints", req(alice, "get", "", "endpoints", "dev", "web"), true, "dev-edit"},
		{"edit cannot write endpoints (CVE-2021-25740)", req(alice, "update", "", "endpoints", "dev", "web"), false, ""},
		{"edit cannot write roles", req(alice, "create", api.RBACGroup, "roles", "dev", ""), false, ""},
		{"edit cannot bind", req(alice, "create", api.RBACGroup, "rolebindings", "dev", ""), false, ""},
		{"edit not in prod", req(alice, "create", "", "pods", "prod", ""), false, ""},
		{"edit not across namespaces", req(alice, "list", "", "pods", "", ""), false, ""},
		{"edit not cluster-scoped", req(alice, "get", "", "nodes", "", "n1"), false, ""},

		// a RoleBinding to a Role
		{"role grants get", req(bob, "get", "", "pods", "dev", "web"), true,
			`RBAC: allowed by RoleBinding "bob-reads/dev" of Role "pod-reader" to User "bob"`},
		{"role grants list", req(bob, "list", "", "pods", "dev", ""), true, "pod-reader"},
		{"role not other verbs", req(bob, "delete", "", "pods", "dev", "web"), false, ""},
		{"role not other resources", req(bob, "get", "", "services", "dev", "web"), false, ""},
		{"role not other groups", req(bob, "get", "apps", "pods", "dev", "web"), false, ""},
		{"role of another namespace does not count", req(bob, "get", "", "pods", "prod", "web"), false, ""},

		// subresources
		{"pods does not cover pods/exec", req(victor, "get", "", "pods/exec", "dev", "web"), false, ""},
		{"pods/log named", req(bob, "get", "", "pods/log", "dev", "web"), true, "pod-reader"},
		{"pods rule not pods/status", req(bob, "get", "", "pods/status", "dev", "web"), false, ""},
		{"*/scale covers replicasets/scale", req(sam, "update", "apps", "replicasets/scale", "dev", "rs"), true, "scaler"},
		{"*/scale covers any resource's scale", req(sam, "update", "", "funcs/scale", "dev", "f"), true, "scaler"},
		{"*/scale not the resource", req(sam, "update", "apps", "replicasets", "dev", "rs"), false, ""},
		{"*/scale not other subresources", req(sam, "update", "apps", "replicasets/status", "dev", "rs"), false, ""},
		{"pods/* is no wildcard", req(pat, "get", "", "pods/log", "dev", "web"), false, ""},
		{"pods/* not pods", req(pat, "get", "", "pods", "dev", "web"), false, ""},

		// resourceNames
		{"named get", req(carol, "get", "", "configmaps", "dev", "app-config"), true,
			`RoleBinding "team-a-config/dev" of Role "one-config" to Group "team-a"`},
		{"named update", req(carol, "update", "", "configmaps", "dev", "app-config"), true, "one-config"},
		{"other name", req(carol, "get", "", "configmaps", "dev", "other"), false, ""},
		{"list without a name", req(carol, "list", "", "configmaps", "dev", ""), false, ""},
		{"list narrowed to the name", req(carol, "list", "", "configmaps", "dev", "app-config"), true, "one-config"},
		{"watch without a name", req(carol, "watch", "", "configmaps", "dev", ""), false, ""},
		{"create without a name", req(carol, "create", "", "configmaps", "dev", ""), false, ""},

		// groups
		{"group member", req(carol, "get", "", "configmaps", "dev", "app-config"), true, `Group "team-a"`},
		{"not a member", req(authn("dave", "team-b"), "get", "", "configmaps", "dev", "app-config"), false, ""},

		// ServiceAccounts
		{"service account of the binding's namespace", req(builder, "list", "", "pods", "dev", ""), true,
			`RoleBinding "sa-view/dev" of ClusterRole "view" to ServiceAccount "builder/dev"`},
		{"same name in another namespace", req(builderProd, "list", "", "pods", "dev", ""), false, ""},
		{"service account of a named namespace", req(deployer, "get", "", "pods", "dev", "web"), true,
			`ServiceAccount "deployer/ci"`},
		{"service account only in the binding's namespace", req(deployer, "get", "", "pods", "ci", "web"), false, ""},
		{"service account user name is not enough elsewhere", req(builder, "list", "", "pods", "prod", ""), false, ""},

		// non-resource URLs
		{"exact path", nonResource(mona, "get", "/metrics"), true,
			`ClusterRoleBinding "metrics-reader" of ClusterRole "metrics-reader" to User "mona"`},
		{"prefix wildcard", nonResource(mona, "get", "/debug/pprof/heap"), true, "metrics-reader"},
		{"prefix wildcard bare", nonResource(mona, "get", "/debug/"), true, "metrics-reader"},
		{"no prefix match without the wildcard", nonResource(mona, "get", "/metrics/extra"), false, ""},
		{"verb matters", nonResource(mona, "post", "/metrics"), false, ""},
		{"public health", nonResource(anonymous, "get", "/healthz"), true,
			`ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`},
		{"public version", nonResource(alice, "get", "/version"), true, `Group "system:authenticated"`},
		{"metrics not public", nonResource(anonymous, "get", "/metrics"), false, ""},
		{"anonymous reads no pods", req(anonymous, "get", "", "pods", "dev", "web"), false, ""},
		{"edit grants no paths", nonResource(alice, "get", "/metrics"), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allowed, reason := Authorize(src, c.a)
			if allowed != c.allow {
				t.Fatalf("Authorize(%+v) = %v (%q), want %v", c.a, allowed, reason, c.allow)
			}
			if !allowed && reason != "" {
				t.Fatalf("denied with reason %q", reason)
			}
			if allowed && !strings.Contains(reason, c.reason) {
				t.Fatalf("reason %q, want it to contain %q", reason, c.reason)
			}
		})
	}
}

func TestRoleBindingToMissingRole(t *testing.T) {
	src, err := NewStatic(
		roleBinding("dev", "dangling", api.RoleKind, "nope", user("alice")),
		roleBinding("dev", "dangling-cluster", api.ClusterRoleKind, "nope", user("alice")),
		clusterRoleBinding("nope", user("alice")),
		// A ClusterRoleBinding cannot grant a Role.
		&api.ClusterRoleBinding{ObjectMeta: api.ObjectMeta{Name: "to-role"}, Subjects: []api.Subject{user("alice")},
			RoleRef: api.RoleRef{APIGroup: api.RBACGroup, Kind: api.RoleKind, Name: "r"}},
		role("", "r", rule([]string{"*"}, groups("*"), "*")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := Authorize(src, req(authn("alice"), "get", "", "pods", "dev", "p")); ok {
		t.Fatalf("allowed by %q", reason)
	}
}

func TestForbidden(t *testing.T) {
	alice := authn("alice")
	cases := []struct {
		a    Attributes
		want string
	}{
		{req(alice, "create", "", "pods", "default", ""),
			`User "alice" cannot create resource "pods" in API group "" in the namespace "default"`},
		{req(alice, "get", "", "pods/log", "default", "web"),
			`User "alice" cannot get resource "pods/log" in API group "" in the namespace "default"`},
		{req(alice, "update", "apps", "replicasets/scale", "dev", "rs"),
			`User "alice" cannot update resource "replicasets/scale" in API group "apps" in the namespace "dev"`},
		{req(alice, "list", "", "nodes", "", ""),
			`User "alice" cannot list resource "nodes" in API group "" at the cluster scope`},
		{req(alice, "list", "", "pods", "", ""),
			`User "alice" cannot list resource "pods" in API group "" at the cluster scope`},
		{req(alice, "create", api.RBACGroup, "clusterroles", "", ""),
			`User "alice" cannot create resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`},
		{nonResource(alice, "get", "/metrics"), `User "alice" cannot get path "/metrics"`},
		{nonResource(anonymous, "post", "/healthz"), `User "system:anonymous" cannot post path "/healthz"`},
	}
	for _, c := range cases {
		if got := Forbidden(c.a); got != c.want {
			t.Errorf("Forbidden(%+v)\n got %s\nwant %s", c.a, got, c.want)
		}
	}
}

// TestBootstrapPolicy checks that each component can do what it does, and
// no more than it should.
func TestBootstrapPolicy(t *testing.T) {
	roles, bindings := BootstrapPolicy()
	names := map[string]bool{}
	for _, r := range roles {
		if r.Labels[BootstrapLabel] != BootstrapLabelValue {
			t.Errorf("ClusterRole %s lacks the bootstrap label", r.Name)
		}
		if r.Kind != "ClusterRole" || r.APIVersion != "rbac.authorization.k8s.io/v1" {
			t.Errorf("ClusterRole %s: %s %s", r.Name, r.APIVersion, r.Kind)
		}
		names[r.Name] = true
	}
	for _, b := range bindings {
		if b.Labels[BootstrapLabel] != BootstrapLabelValue {
			t.Errorf("ClusterRoleBinding %s lacks the bootstrap label", b.Name)
		}
		if !names[b.RoleRef.Name] || b.RoleRef.Kind != api.ClusterRoleKind || b.RoleRef.APIGroup != api.RBACGroup {
			t.Errorf("ClusterRoleBinding %s refers to %+v", b.Name, b.RoleRef)
		}
	}
	for _, n := range []string{ClusterAdmin, Admin, Edit, View, SystemNode, SystemScheduler, SystemControllerManager,
		SystemFuncRunner, FunctionInvoker, SystemPublicInfoViewer} {
		if !names[n] {
			t.Errorf("no ClusterRole %s", n)
		}
	}
	// Each call gives fresh objects.
	again, _ := BootstrapPolicy()
	again[0].Rules[0].Verbs[0] = "get"
	if roles[0].Rules[0].Verbs[0] != "*" {
		t.Error("BootstrapPolicy shares its objects between calls")
	}

	src := testSource(t)
	// Invokers get function-invoker in their namespace.
	if err := src.Add(roleBinding("dev", "invokers", api.ClusterRoleKind, FunctionInvoker, user("ivan"))); err != nil {
		t.Fatal(err)
	}
	if err := src.Add(roleBinding("dev", "dev-admin", api.ClusterRoleKind, Admin, user("ada"))); err != nil {
		t.Fatal(err)
	}
	node := authn(NodeUserPrefix+"n1", NodesGroup)
	sched := authn(SchedulerUser)
	cm := authn(ControllerManagerUser)
	runner := authn("system:funcrunner:r1", FuncRunnersGroup)
	ivan := authn("ivan")
	ada := authn("ada")
	coord := "coordination.k8s.io"

	cases := []struct {
		name  string
		a     Attributes
		allow bool
	}{
		{"node watches pods", req(node, "watch", "", "pods", "", ""), true},
		// The node authorizer grants what its pods use (apiserver).
		{"node reads no secrets by role", req(node, "get", "", "secrets", "dev", "s"), false},
		{"node reads no configmaps by role", req(node, "get", "", "configmaps", "dev", "c"), false},
		{"node registers", req(node, "create", "", "nodes", "", ""), true},
		{"node reports status", req(node, "update", "", "nodes/status", "", "n1"), true},
		{"node reports pod status", req(node, "patch", "", "pods/status", "dev", "p"), true},
		{"node deletes pods", req(node, "delete", "", "pods", "dev", "p"), true},
		{"node creates no pods", req(node, "create", "", "pods", "dev", ""), false},
		{"node creates events", req(node, "create", "", "events", "dev", ""), true},
		{"node holds no lease", req(node, "update", coord, "leases", "minik8s-system", "funcrunner"), false},
		{"node does not delete nodes", req(node, "delete", "", "nodes", "", "n2"), false},
		{"node does not update pods", req(node, "update", "", "pods", "dev", "p"), false},
		{"node does not write secrets", req(node, "update", "", "secrets", "dev", "s"), false},

		{"scheduler lists nodes", req(sched, "list", "", "nodes", "", ""), true},
		{"scheduler binds", req(sched, "create", "", "pods/binding", "dev", "p"), true},
		{"scheduler reports status", req(sched, "update", "", "pods/status", "dev", "p"), true},
		{"scheduler creates events", req(sched, "create", "", "events", "dev", ""), true},
		{"scheduler deletes the pods it preempts", req(sched, "delete", "", "pods", "dev", "p"), true},
		{"scheduler creates no pods", req(sched, "create", "", "pods", "dev", ""), false},
		{"scheduler reads no secrets", req(sched, "get", "", "secrets", "dev", "s"), false},

		{"controller reads anything", req(cm, "list", "made.up", "things", "", ""), true},
		{"controller creates pods", req(cm, "create", "", "pods", "dev", ""), true},
		{"controller creates replicasets", req(cm, "create", "apps", "replicasets", "dev", ""), true},
		{"controller updates rs status", req(cm, "update", "apps", "replicasets/status", "dev", "rs"), true},
		{"controller writes func status", req(cm, "update", FuncGroup, "funcs/status", "dev", "f"), true},
		{"controller writes func status in core", req(cm, "update", "", "funcs/status", "dev", "f"), true},
		{"controller deletes funcinstances", req(cm, "delete", "", "funcinstances", "dev", "i"), true},
		{"controller writes endpoints", req(cm, "update", "", "endpoints", "dev", "svc"), true},
		{"controller writes node status", req(cm, "update", "", "nodes/status", "", "n1"), true},
		{"controller makes service account tokens", req(cm, "create", "", "secrets", "dev", ""), true},
		{"controller creates service accounts", req(cm, "create", "", "serviceaccounts", "dev", ""), true},
		{"controller garbage-collects", req(cm, "delete", FuncGroup, "triggers", "dev", "t"), true},
		{"controller does not create funcs", req(cm, "create", FuncGroup, "funcs", "dev", ""), false},
		{"controller does not write roles", req(cm, "create", api.RBACGroup, "clusterrolebindings", "", ""), false},
		{"controller writes node taints", req(cm, "update", "", "nodes", "", "n1"), true},
		{"controller creates no nodes", req(cm, "create", "", "nodes", "", ""), false},

		{"runner watches funcs", req(runner, "watch", FuncGroup, "funcs", "", ""), true},
		{"runner lists funcinstances", req(runner, "list", "", "funcinstances", "", ""), true},
		{"runner reads replicasets", req(runner, "get", "apps", "replicasets", "dev", "rs"), true},
		{"runner watches nodes (addresses callbacks may not reach)", req(runner, "watch", "", "nodes", "", ""), true},
		{"runner lists services (cluster IPs callbacks may not reach)", req(runner, "list", "", "services", "", ""), true},
		{"runner changes no service", req(runner, "update", "", "services", "dev", "s"), false},
		{"runner updates instance status", req(runner, "update", FuncGroup, "funcinstances/status", "dev", "i"), true},
		{"runner holds a lease", req(runner, "create", coord, "leases", "minik8s-system", ""), true},
		{"runner drops a lease", req(runner, "delete", coord, "leases", "minik8s-system", "r1"), true},
		{"runner starts a v1 step pod", req(runner, "create", "", "pods", "dev", ""), true},
		{"runner removes a v1 step pod", req(runner, "delete", "", "pods", "dev", "p"), true},
		{"runner reads no secrets", req(runner, "get", "", "secrets", "dev", "s"), false},
		{"runner does not write funcs", req(runner, "update", FuncGroup, "funcs", "dev", "f"), false},
		{"runner does not write func status", req(runner, "update", FuncGroup, "funcs/status", "dev", "f"), false},

		{"invoker invokes", req(ivan, "create", FuncGroup, "funcs/invoke", "dev", "f"), true},
		{"invoker invokes in core", req(ivan, "create", "", "funcs/invoke", "dev", "f"), true},
		{"invoker lists funcs", req(ivan, "list", FuncGroup, "funcs", "dev", ""), true},
		{"invoker reads own instances", req(ivan, "watch", FuncGroup, "funcinstances/own", "dev", ""), true},
		{"invoker updates own instances", req(ivan, "update", FuncGroup, "funcinstances/own", "dev", "i"), true},
		{"invoker does not read all instances", req(ivan, "list", FuncGroup, "funcinstances", "dev", ""), false},
		{"invoker does not write funcs", req(ivan, "create", FuncGroup, "funcs", "dev", ""), false},
		{"invoker only in its namespace", req(ivan, "create", FuncGroup, "funcs/invoke", "prod", "f"), false},

		{"admin binds in its namespace", req(ada, "create", api.RBACGroup, "rolebindings", "dev", ""), true},
		{"admin writes roles", req(ada, "update", api.RBACGroup, "roles", "dev", "r"), true},
		{"admin writes secrets", req(ada, "delete", "", "secrets", "dev", "s"), true},
		{"admin not cluster roles", req(ada, "create", api.RBACGroup, "clusterroles", "", ""), false},
		{"admin not in prod", req(ada, "create", api.RBACGroup, "rolebindings", "prod", ""), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allowed, reason := Authorize(src, c.a)
			if allowed != c.allow {
				t.Fatalf("Authorize(%+v) = %v (%q), want %v", c.a, allowed, reason, c.allow)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	cases := []struct {
		name             string
		owner, requested []api.PolicyRule
		covered          bool
		missing          int
	}{
		{"edit covers view", editRules(), viewRules(), true, 0},
		{"view does not cover edit", viewRules(), editRules(), false, -1},
		{"star covers all", []api.PolicyRule{rule([]string{"*"}, groups("*"), "*")}, adminRules(), true, 0},
		{"*/scale covers a scale", []api.PolicyRule{rule([]string{"update"}, groups("apps"), "*/scale")},
			[]api.PolicyRule{rule([]string{"update"}, groups("apps"), "replicasets/scale")}, true, 0},
		{"named does not cover unnamed",
			[]api.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}},
			[]api.PolicyRule{rule([]string{"get"}, groups(""), "configmaps")}, false, 1},
		{"unnamed covers named", []api.PolicyRule{rule([]string{"get"}, groups(""), "configmaps")},
			[]api.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a", "b"}}},
			true, 0},
		{"url prefix", []api.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/debug/*"}}},
			[]api.PolicyRule{{Verbs: []string{"get", "post"}, NonResourceURLs: []string{"/debug/pprof", "/metrics"}}}, false, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, missing := Covers(c.owner, c.requested)
			if ok != c.covered || (c.missing >= 0 && len(missing) != c.missing) {
				t.Fatalf("Covers = %v, missing %v", ok, missing)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	src := testSource(t)
	// The public info viewer, basic user and discovery, granted to
	// everyone authenticated, and pod-reader in dev.
	if rules := RulesFor(src, authn("bob"), "dev"); len(rules) != 5 {
		t.Errorf("bob in dev: %v", rules)
	}
	if rules := RulesFor(src, authn("bob"), "prod"); len(rules) != 3 {
		t.Errorf("bob in prod: %v", rules)
	}
	if rules := RulesFor(src, authn("bob"), ""); len(rules) != 3 {
		t.Errorf("bob cluster-wide: %v", rules)
	}
}

func TestReviewAttributes(t *testing.T) {
	u := authn("alice")
	a, err := ReviewAttributes(u, &api.ResourceAttributes{Namespace: "dev", Verb: "get", Group: "apps",
		Resource: "replicasets", Subresource: "scale", Name: "rs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Attributes{User: u, Verb: "get", APIGroup: "apps", Resource: "replicasets", Subresource: "scale",
		Namespace: "dev", Name: "rs", ResourceRequest: true}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("got %+v, want %+v", a, want)
	}
	a, err = ReviewAttributes(u, nil, &api.NonResourceAttributes{Path: "/healthz", Verb: "get"})
	if err != nil || a.ResourceRequest || a.Path != "/healthz" || a.Verb != "get" {
		t.Errorf("got %+v, %v", a, err)
	}
	for _, bad := range [][2]bool{{false, false}, {true, true}} {
		var res *api.ResourceAttributes
		var nonRes *api.NonResourceAttributes
		if bad[0] {
			res, nonRes = &api.ResourceAttributes{}, &api.NonResourceAttributes{}
		}
		if _, err := ReviewAttributes(u, res, nonRes); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("ReviewAttributes(%v, %v) = %v, want invalid", res, nonRes, err)
		}
	}
}

func TestStaticRefusesOtherKinds(t *testing.T) {
	if _, err := NewStatic(&api.Pod{}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("NewStatic(pod) = %v", err)
	}
}

// TestWireNames checks the JSON names against Kubernetes'.
func TestWireNames(t *testing.T) {
	b, err := json.Marshal(&api.RoleBinding{
		TypeMeta:   api.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: api.ObjectMeta{Name: "b", Namespace: "dev"},
		Subjects:   []api.Subject{{Kind: "ServiceAccount", Name: "sa", Namespace: "dev"}, group("g")},
		RoleRef:    api.RoleRef{APIGroup: api.RBACGroup, Kind: "Role", Name: "r"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"dev"},` +
		`"subjects":[{"kind":"ServiceAccount","name":"sa","namespace":"dev"},{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"g"}],` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}

	b, err = json.Marshal(&api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "c"}, Rules: []api.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want = `{"metadata":{"name":"c"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"resourceNames":["p"]},` +
		`{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}

	var sar api.SubjectAccessReview
	in := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"resourceAttributes":` +
		`{"namespace":"dev","verb":"get","group":"apps","version":"v1","resource":"replicasets","subresource":"scale","name":"rs"},` +
		`"user":"alice","groups":["g"],"uid":"u1","extra":{"k":["v"]}}}`
	if err := json.Unmarshal([]byte(in), &sar); err != nil {
		t.Fatal(err)
	}
	ra := sar.Spec.ResourceAttributes
	if ra == nil || ra.Namespace != "dev" || ra.Verb != "get" || ra.Group != "apps" || ra.Version != "v1" ||
		ra.Resource != "replicasets" || ra.Subresource != "scale" || ra.Name != "rs" ||
		sar.Spec.User != "alice" || len(sar.Spec.Groups) != 1 || sar.Spec.UID != "u1" || sar.Spec.Extra["k"][0] != "v" {
		t.Errorf("decoded %+v %+v", sar.Spec, ra)
	}
	sar.Status = api.SubjectAccessReviewStatus{Allowed: false}
	b, _ = json.Marshal(sar.Status)
	if string(b) != `{"allowed":false}` {
		t.Errorf("status %s", b)
	}
	b, _ = json.Marshal(api.SelfSubjectAccessReviewSpec{NonResourceAttributes: &api.NonResourceAttributes{Path: "/metrics", Verb: "get"}})
	if string(b) != `{"nonResourceAttributes":{"path":"/metrics","verb":"get"}}` {
		t.Errorf("self spec %s", b)
	}
	var _ api.Object = &api.SelfSubjectAccessReview{}
	var _ api.Object = &api.SubjectAccessReview{}
}
