package rbac

import (
	"slices"

	"minik8s/pkg/api"
)

// The label and annotation Kubernetes puts on its default policy.
const (
	BootstrapLabel      = "kubernetes.io/bootstrapping"
	BootstrapLabelValue = "rbac-defaults"
	// AutoUpdateAnnotation "true": the apiserver may reconcile the object
	// with BootstrapPolicy at start.
	AutoUpdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"
)

// Names of the built-in ClusterRoles.
const (
	ClusterAdmin            = "cluster-admin"
	Admin                   = "admin"
	Edit                    = "edit"
	View                    = "view"
	SystemNode              = "system:node"
	SystemScheduler         = "system:kube-scheduler"
	SystemControllerManager = "system:kube-controller-manager"
	SystemFuncRunner        = "system:funcrunner"
	FunctionInvoker         = "function-invoker"
	SystemPublicInfoViewer  = "system:public-info-viewer"
	SystemBasicUser         = "system:basic-user"
	SystemDiscovery         = "system:discovery"
	SystemNodeBootstrapper  = "system:node-bootstrapper"
)

// API groups of minik8s' resources.
const (
	coreGroup         = ""
	appsGroup         = "apps"
	batchGroup        = "batch"
	metricsGroup      = "metrics.k8s.io"
	autoscalingGroup  = "autoscaling"
	coordinationGroup = "coordination.k8s.io"
	networkingGroup   = api.NetworkingGroup
	policyGroup       = api.PolicyGroup
	storageGroup      = api.StorageGroup
	// FuncGroup serves funcs, funcinstances and triggers; /api/v1 serves
	// them too, so rules on them name both groups.
	FuncGroup = api.FuncGroup
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = slices.Concat(read, write)
	// funcGroups are where the function kinds are served.
	funcGroups = []string{coreGroup, FuncGroup}
)

func rule(verbs []string, groups []string, resources ...string) api.PolicyRule {
	return api.PolicyRule{Verbs: slices.Clone(verbs), APIGroups: slices.Clone(groups), Resources: resources}
}

func verbs(v ...string) []string  { return v }
func groups(g ...string) []string { return g }

// viewRules read everything in the core, apps, coordination.k8s.io and
// minik8s.io groups but secrets.
func viewRules() []api.PolicyRule {
	return []api.PolicyRule{
		rule(read, groups(coreGroup), "pods", "pods/log", "pods/status", "services", "services/status",
			"endpoints", "configmaps", "serviceaccounts", "namespaces", "namespaces/status", "events",
			"nodes", "nodes/status", "limitranges", "resourcequotas", "resourcequotas/status",
			"persistentvolumeclaims", "persistentvolumeclaims/status"),
		rule(read, groups(appsGroup), "replicasets", "replicasets/status", "replicasets/scale",
			"deployments", "deployments/status", "deployments/scale", "daemonsets", "daemonsets/status",
			"statefulsets", "statefulsets/status", "statefulsets/scale", "controllerrevisions"),
		rule(read, groups(batchGroup), "jobs", "jobs/status", "cronjobs", "cronjobs/status"),
		rule(read, groups(metricsGroup), "pods", "nodes"),
		rule(read, groups(autoscalingGroup), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(read, groups(coordinationGroup), "leases"),
		rule(read, groups(networkingGroup), "ingresses", "ingresses/status", "networkpolicies"),
		rule(read, groups(policyGroup), "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(read, funcGroups, "funcs", "funcs/status", "funcinstances", "funcinstances/status",
			"triggers", "triggers/status", "apps", "funcrevisions", "funcrevisions/status"),
	}
}

// editRules add secrets and writes on what users make in a namespace. As in
// Kubernetes, edit writes no status, nodes, namespaces or events, and no
// RBAC objects; nor Endpoints (Kubernetes took them from edit after
// CVE-2021-25740): the nodes' kernel rules send a Service's traffic where
// its Endpoints say, so a user who wrote them could point a Service the
// platform or another tenant trusts at any address.
func editRules() []api.PolicyRule {
	return append(viewRules(),
		rule(readWrite, groups(coreGroup), "pods", "services", "configmaps", "secrets",
			"serviceaccounts", "persistentvolumeclaims"),
		// No PersistentVolumes or StorageClasses, as in Kubernetes: a
		// volume is a directory on a node, which a claim of any namespace
		// may bind.
		rule(verbs("create", "get"), groups(coreGroup), "pods/exec", "pods/portforward"),
		// An eviction deletes a pod as its budget allows: no more than
		// deleting it, which edit may.
		rule(verbs("create"), groups(coreGroup), "pods/eviction"),
		rule(readWrite, groups(appsGroup), "replicasets", "replicasets/scale", "deployments", "deployments/scale", "daemonsets",
			"statefulsets", "statefulsets/scale"),
		rule(readWrite, groups(batchGroup), "jobs", "cronjobs"),
		rule(readWrite, groups(autoscalingGroup), "horizontalpodautoscalers"),
		rule(readWrite, groups(coordinationGroup), "leases"),
		rule(readWrite, groups(networkingGroup), "ingresses", "networkpolicies"),
		rule(readWrite, groups(policyGroup), "poddisruptionbudgets"),
		// No PriorityClasses, to read or write, as in Kubernetes: a class
		// weighs pods of every namespace against each other (the
		// scheduler preempts by it), so only cluster admins make them.
		rule(readWrite, funcGroups, "funcs", "funcinstances", "triggers", "apps"),
		rule(verbs("create"), funcGroups, "funcs/invoke"),
	)
}

// adminRules add Roles and RoleBindings, to run a namespace.
func adminRules() []api.PolicyRule {
	return append(editRules(),
		rule(readWrite, groups(api.RBACGroup), "roles", "rolebindings"),
	)
}

func clusterRole(name string, rules ...api.PolicyRule) *api.ClusterRole {
	return &api.ClusterRole{
		TypeMeta:   api.TypeMeta{APIVersion: api.RBACGroup + "/v1", Kind: api.ClusterRoleKind},
		ObjectMeta: bootstrapMeta(name),
		Rules:      rules,
	}
}

func clusterRoleBinding(role string, subjects ...api.Subject) *api.ClusterRoleBinding {
	return &api.ClusterRoleBinding{
		TypeMeta:   api.TypeMeta{APIVersion: api.RBACGroup + "/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: bootstrapMeta(role),
		Subjects:   subjects,
		RoleRef:    api.RoleRef{APIGroup: api.RBACGroup, Kind: api.ClusterRoleKind, Name: role},
	}
}

func bootstrapMeta(name string) api.ObjectMeta {
	return api.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{BootstrapLabel: BootstrapLabelValue},
		Annotations: map[string]string{AutoUpdateAnnotation: "true"},
	}
}

func group(name string) api.Subject {
	return api.Subject{Kind: api.GroupKind, APIGroup: api.RBACGroup, Name: name}
}

func user(name string) api.Subject {
	return api.Subject{Kind: api.UserKind, APIGroup: api.RBACGroup, Name: name}
}

// BootstrapPolicy returns the built-in ClusterRoles and ClusterRoleBindings,
// fresh on each call, each labelled kubernetes.io/bootstrapping=rbac-defaults.
// admin, edit, view and function-invoker have no binding: they are meant
// for RoleBindings (or ClusterRoleBindings) an administrator makes.
func BootstrapPolicy() (roles []*api.ClusterRole, bindings []*api.ClusterRoleBinding) {
	roles = []*api.ClusterRole{
		clusterRole(ClusterAdmin,
			rule(verbs(api.VerbAll), groups(api.APIGroupAll), api.ResourceAll),
			api.PolicyRule{Verbs: verbs(api.VerbAll), NonResourceURLs: []string{api.NonResourceAll}},
		),
		clusterRole(Admin, adminRules()...),
		clusterRole(Edit, editRules()...),
		clusterRole(View, viewRules()...),
		// Secrets and ConfigMaps are the node authorizer's: a node reads
		// those its pods use and no others. A kubelet creates no pods (no
		// mirror pods here) and holds no Lease, so it may write none.
		clusterRole(SystemNode,
			rule(read, groups(coreGroup), "pods", "services", "endpoints", "nodes"),
			// Every node's kubelet serves the Ingresses (its TLS Secrets by
			// the node authorizer).
			rule(read, groups(networkingGroup), "ingresses", "ingressclasses"),
			// Every node's kubelet enforces the policies of its pods, whose
			// peers are pods of any namespace the policies select by label.
			rule(read, groups(networkingGroup), "networkpolicies"),
			rule(read, groups(coreGroup), "namespaces"),
			rule(verbs("create", "update", "patch"), groups(coreGroup), "nodes", "nodes/status"),
			rule(verbs("update", "patch"), groups(coreGroup), "pods/status"),
			rule(verbs("delete"), groups(coreGroup), "pods"),
			rule(verbs("create", "update", "patch"), groups(coreGroup), "events"),
			// The token mounted into each pod (the node restriction keeps
			// it to pods bound to the node).
			rule(verbs("create"), groups(coreGroup), "serviceaccounts/token"),
		),
		clusterRole(SystemScheduler,
			rule(read, groups(coreGroup), "pods", "nodes"),
			rule(verbs("create"), groups(coreGroup), "pods/binding", "bindings"),
			rule(verbs("update", "patch"), groups(coreGroup), "pods/status"),
			// Preemption deletes pods of lower priority, as Kubernetes'
			// scheduler does.
			rule(verbs("delete"), groups(coreGroup), "pods"),
			rule(verbs("create", "update", "patch"), groups(coreGroup), "events"),
			// Kubernetes' VolumeBinding plugin: a pod waits for its claims,
			// goes to its volumes' nodes, and names the node a claim
			// waiting for its first consumer is provisioned on.
			rule(read, groups(coreGroup), "persistentvolumeclaims", "persistentvolumes"),
			rule(read, groups(storageGroup), "storageclasses"),
			rule(verbs("update", "patch"), groups(coreGroup), "persistentvolumeclaims"),
		),
		clusterRole(SystemControllerManager,
			rule(read, groups(api.APIGroupAll), api.ResourceAll),
			rule(verbs("create", "update", "patch", "delete"), groups(coreGroup),
				"pods", "pods/status", "services", "services/status", "endpoints", "configmaps", "secrets",
				"serviceaccounts", "namespaces", "namespaces/status", "namespaces/finalize", "nodes/status", "events",
				"resourcequotas/status", "persistentvolumes", "persistentvolumes/status",
				"persistentvolumeclaims", "persistentvolumeclaims/status"),
			// The node lifecycle controller keeps the nodes' not-ready and
			// unreachable taints, as Kubernetes' node-controller role may.
			rule(verbs("update", "patch"), groups(coreGroup), "nodes"),
			rule(verbs("create", "update", "patch", "delete"), groups(appsGroup),
				"replicasets", "replicasets/status", "replicasets/scale", "deployments/status", "deployments/scale", "statefulsets/scale",
				"daemonsets/status", "statefulsets/status", "controllerrevisions"),
			rule(verbs("update", "patch"), groups(autoscalingGroup), "horizontalpodautoscalers/status"),
			rule(verbs("create", "update", "patch", "delete"), groups(batchGroup), "jobs", "jobs/status", "cronjobs/status"),
			rule(verbs("update", "patch"), groups(networkingGroup), "ingresses/status"),
			rule(verbs("update", "patch"), groups(policyGroup), "poddisruptionbudgets/status"),
			// ReplicaSets' templates were admitted when their authors
			// wrote them: their pods may be privileged.
			rule(verbs("create"), groups(coreGroup), "pods/privileged"),
			rule(verbs("create", "update", "patch", "delete"), groups(coordinationGroup), "leases"),
			rule(verbs("update", "patch"), funcGroups, "funcs", "funcs/status"),
			rule(verbs("create", "update", "patch", "delete"), funcGroups, "funcinstances", "funcinstances/status"),
			// A function's revisions are the function controller's alone:
			// users read them (no one may rewrite what ran as revision N).
			rule(verbs("create", "update", "patch", "delete"), funcGroups, "funcrevisions", "funcrevisions/status"),
			// The garbage collector deletes any object whose owners are
			// gone, the namespace controller everything in a deleted
			// namespace: as Kubernetes' generic-garbage-collector and
			// namespace-controller, on every resource.
			rule(verbs("delete", "deletecollection"), groups(api.APIGroupAll), api.ResourceAll),
		),
		clusterRole(SystemFuncRunner,
			rule(read, funcGroups, "funcs", "funcinstances", "triggers", "apps", "funcrevisions"),
			// Nodes and services: the addresses its callbacks may not reach.
			rule(read, groups(coreGroup), "pods", "endpoints", "nodes", "services"),
			rule(read, groups(appsGroup), "replicasets"),
			rule(read, groups(coordinationGroup), "leases"),
			rule(verbs("create", "update", "patch"), funcGroups, "funcinstances", "funcinstances/status"),
			rule(verbs("update", "patch"), funcGroups, "triggers/status"),
			rule(verbs("create", "update", "patch", "delete"), groups(coordinationGroup), "leases"),
			// A v1 function runs each step in a pod of its own.
			rule(verbs("create", "delete"), groups(coreGroup), "pods"),
			// Claiming a warm pod relabels it, and nothing else
			// (apiserver's admitRunnerPodUpdate).
			rule(verbs("update"), groups(coreGroup), "pods"),
			rule(verbs("create", "update", "patch"), groups(coreGroup), "events"),
		),
		clusterRole(FunctionInvoker,
			rule(verbs("get", "list"), funcGroups, "funcs"),
			rule(verbs("create"), funcGroups, "funcs/invoke"),
			// funcinstances/own: the instances the requester started.
			rule(verbs("get", "list", "watch", "update"), funcGroups, "funcinstances/own"),
		),
		clusterRole(SystemPublicInfoViewer,
			api.PolicyRule{Verbs: verbs("get"), NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/version/", "/cacerts", "/ui", "/ui/*"}},
		),
		clusterRole(SystemDiscovery,
			api.PolicyRule{Verbs: verbs("get"), NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/"}},
		),
		clusterRole(SystemNodeBootstrapper,
			api.PolicyRule{Verbs: verbs("post"), NonResourceURLs: []string{api.NodeCredentialsPath}},
		),
		clusterRole(SystemBasicUser,
			rule(verbs("create"), groups("authorization.k8s.io"), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
		),
	}
	bindings = []*api.ClusterRoleBinding{
		clusterRoleBinding(ClusterAdmin, group(Masters)),
		clusterRoleBinding(SystemNode, group(NodesGroup)),
		clusterRoleBinding(SystemScheduler, user(SchedulerUser)),
		clusterRoleBinding(SystemControllerManager, user(ControllerManagerUser)),
		clusterRoleBinding(SystemFuncRunner, group(FuncRunnersGroup)),
		clusterRoleBinding(SystemPublicInfoViewer, group(AllAuthenticated), group(AllUnauthenticated)),
		clusterRoleBinding(SystemBasicUser, group(AllAuthenticated)),
		clusterRoleBinding(SystemDiscovery, group(AllAuthenticated)),
		// Nodes renew their credentials as they got them.
		clusterRoleBinding(SystemNodeBootstrapper, group(BootstrappersGroup), group(NodesGroup)),
	}
	return roles, bindings
}
