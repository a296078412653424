package api

import "strings"

// Resource describes one REST collection: its names, where it lives and how
// to make an empty object of it. The apiserver, the client and mkctl all read
// this one table, so a kind is added in one place.
type Resource struct {
	// Name is the plural used in paths ("pods").
	Name       string
	Kind       string
	ShortNames []string
	// Group is "" for the core group, "apps" for ReplicaSets.
	Group      string
	Version    string
	Namespaced bool
	// HasStatus: the object has a status subresource, and a PUT of the object
	// itself leaves the status as it is.
	HasStatus bool
	New       func() Object
	// Custom: a kind a CustomResourceDefinition declares (its objects are
	// CustomObjects, stored under CustomResourcePrefix).
	Custom bool
}

// GroupVersion is the apiVersion objects of this resource carry.
func (r Resource) GroupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Prefix is the path up to the namespace: "/api/v1" or "/apis/apps/v1".
func (r Resource) Prefix() string {
	if r.Group == "" {
		return "/api/" + r.Version
	}
	return "/apis/" + r.Group + "/" + r.Version
}

// Path is the REST path of the collection (name == "") or of one object.
// ns == "" on a namespaced resource means all namespaces.
func (r Resource) Path(ns, name string) string {
	p := r.Prefix()
	if r.Namespaced && ns != "" {
		p += "/namespaces/" + ns
	}
	p += "/" + r.Name
	if name != "" {
		p += "/" + name
	}
	return p
}

const DefaultNamespace = "default"

var (
	NodesResource = Resource{Name: "nodes", Kind: "Node", ShortNames: []string{"no", "node"}, Version: "v1",
		HasStatus: true, New: func() Object { return &Node{} }}
	PodsResource = Resource{Name: "pods", Kind: "Pod", ShortNames: []string{"po", "pod"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &Pod{} }}
	ReplicaSetsResource = Resource{Name: "replicasets", Kind: "ReplicaSet", ShortNames: []string{"rs", "replicaset"},
		Group: "apps", Version: "v1", Namespaced: true, HasStatus: true, New: func() Object { return &ReplicaSet{} }}
	DeploymentsResource = Resource{Name: "deployments", Kind: "Deployment", ShortNames: []string{"deploy", "deployment"},
		Group: "apps", Version: "v1", Namespaced: true, HasStatus: true, New: func() Object { return &Deployment{} }}
	DaemonSetsResource = Resource{Name: "daemonsets", Kind: "DaemonSet", ShortNames: []string{"ds", "daemonset"},
		Group: "apps", Version: "v1", Namespaced: true, HasStatus: true, New: func() Object { return &DaemonSet{} }}
	StatefulSetsResource = Resource{Name: "statefulsets", Kind: "StatefulSet", ShortNames: []string{"sts", "statefulset"},
		Group: "apps", Version: "v1", Namespaced: true, HasStatus: true, New: func() Object { return &StatefulSet{} }}
	ControllerRevisionsResource = Resource{Name: "controllerrevisions", Kind: "ControllerRevision", ShortNames: []string{"controllerrevision"},
		Group: "apps", Version: "v1", Namespaced: true, New: func() Object { return &ControllerRevision{} }}
	HorizontalPodAutoscalersResource = Resource{Name: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler", ShortNames: []string{"hpa", "horizontalpodautoscaler"},
		Group: "autoscaling", Version: "v2", Namespaced: true, HasStatus: true, New: func() Object { return &HorizontalPodAutoscaler{} }}
	// HorizontalPodAutoscalersV1Resource serves the HPAs again at
	// autoscaling/v1: the same objects, converted (see
	// HorizontalPodAutoscalerV1).
	HorizontalPodAutoscalersV1Resource = Resource{Name: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler", ShortNames: []string{"hpa", "horizontalpodautoscaler"},
		Group: "autoscaling", Version: "v1", Namespaced: true, HasStatus: true, New: func() Object { return &HorizontalPodAutoscalerV1{} }}
	JobsResource = Resource{Name: "jobs", Kind: "Job", ShortNames: []string{"job"},
		Group: "batch", Version: "v1", Namespaced: true, HasStatus: true, New: func() Object { return &Job{} }}
	CronJobsResource = Resource{Name: "cronjobs", Kind: "CronJob", ShortNames: []string{"cj", "cronjob"},
		Group: "batch", Version: "v1", Namespaced: true, HasStatus: true, New: func() Object { return &CronJob{} }}
	ServicesResource = Resource{Name: "services", Kind: "Service", ShortNames: []string{"svc", "service"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &Service{} }}
	EndpointsResource = Resource{Name: "endpoints", Kind: "Endpoints", ShortNames: []string{"ep"}, Version: "v1",
		Namespaced: true, New: func() Object { return &Endpoints{} }}
	LimitRangesResource = Resource{Name: "limitranges", Kind: "LimitRange", ShortNames: []string{"limits", "limitrange"}, Version: "v1",
		Namespaced: true, New: func() Object { return &LimitRange{} }}
	ResourceQuotasResource = Resource{Name: "resourcequotas", Kind: "ResourceQuota", ShortNames: []string{"quota", "resourcequota"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &ResourceQuota{} }}
	ConfigMapsResource = Resource{Name: "configmaps", Kind: "ConfigMap", ShortNames: []string{"cm", "configmap"}, Version: "v1",
		Namespaced: true, New: func() Object { return &ConfigMap{} }}
	// Funcs live under /api/v1 but keep the apiVersion the user gave (v1 or
	// v2, default v2): it picks the serving mode.
	FuncsResource = Resource{Name: "funcs", Kind: "Func", ShortNames: []string{"func", "fn", "function", "functions"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &Func{} }}
	FuncInstancesResource = Resource{Name: "funcinstances", Kind: "FuncInstance", ShortNames: []string{"fi", "funcinstance"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &FuncInstance{} }}
	TriggersResource = Resource{Name: "triggers", Kind: "Trigger", ShortNames: []string{"trigger", "tr"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &Trigger{} }}
	FuncRevisionsResource = Resource{Name: "funcrevisions", Kind: "FuncRevision", ShortNames: []string{"funcrevision", "frev"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &FuncRevision{} }}
	AppsResource = Resource{Name: "apps", Kind: "App", ShortNames: []string{"app"}, Version: "v1",
		Namespaced: true, New: func() Object { return &App{} }}
	NamespacesResource = Resource{Name: "namespaces", Kind: "Namespace", ShortNames: []string{"ns", "namespace"}, Version: "v1",
		HasStatus: true, New: func() Object { return &Namespace{} }}
	SecretsResource = Resource{Name: "secrets", Kind: "Secret", ShortNames: []string{"secret"}, Version: "v1",
		Namespaced: true, New: func() Object { return &Secret{} }}
	ServiceAccountsResource = Resource{Name: "serviceaccounts", Kind: "ServiceAccount", ShortNames: []string{"sa", "serviceaccount"}, Version: "v1",
		Namespaced: true, New: func() Object { return &ServiceAccount{} }}
	RolesResource = Resource{Name: "roles", Kind: "Role", ShortNames: []string{"role"}, Group: RBACGroup, Version: "v1",
		Namespaced: true, New: func() Object { return &Role{} }}
	ClusterRolesResource = Resource{Name: "clusterroles", Kind: "ClusterRole", ShortNames: []string{"clusterrole"}, Group: RBACGroup, Version: "v1",
		New: func() Object { return &ClusterRole{} }}
	RoleBindingsResource = Resource{Name: "rolebindings", Kind: "RoleBinding", ShortNames: []string{"rolebinding"}, Group: RBACGroup, Version: "v1",
		Namespaced: true, New: func() Object { return &RoleBinding{} }}
	ClusterRoleBindingsResource = Resource{Name: "clusterrolebindings", Kind: "ClusterRoleBinding", ShortNames: []string{"clusterrolebinding"}, Group: RBACGroup, Version: "v1",
		New: func() Object { return &ClusterRoleBinding{} }}
	EventsResource = Resource{Name: "events", Kind: "Event", ShortNames: []string{"ev", "event"}, Version: "v1",
		Namespaced: true, New: func() Object { return &Event{} }}
	IngressesResource = Resource{Name: "ingresses", Kind: "Ingress", ShortNames: []string{"ing", "ingress"}, Group: NetworkingGroup, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &Ingress{} }}
	IngressClassesResource = Resource{Name: "ingressclasses", Kind: "IngressClass", ShortNames: []string{"ingressclass"}, Group: NetworkingGroup, Version: "v1",
		New: func() Object { return &IngressClass{} }}
	NetworkPoliciesResource = Resource{Name: "networkpolicies", Kind: "NetworkPolicy", ShortNames: []string{"netpol", "networkpolicy"}, Group: NetworkingGroup, Version: "v1",
		Namespaced: true, New: func() Object { return &NetworkPolicy{} }}
	PodDisruptionBudgetsResource = Resource{Name: "poddisruptionbudgets", Kind: "PodDisruptionBudget", ShortNames: []string{"pdb", "poddisruptionbudget"}, Group: PolicyGroup, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &PodDisruptionBudget{} }}
	PriorityClassesResource = Resource{Name: "priorityclasses", Kind: "PriorityClass", ShortNames: []string{"pc", "priorityclass"}, Group: SchedulingGroup, Version: "v1",
		New: func() Object { return &PriorityClass{} }}
	PersistentVolumesResource = Resource{Name: "persistentvolumes", Kind: "PersistentVolume", ShortNames: []string{"pv", "persistentvolume"}, Version: "v1",
		HasStatus: true, New: func() Object { return &PersistentVolume{} }}
	PersistentVolumeClaimsResource = Resource{Name: "persistentvolumeclaims", Kind: "PersistentVolumeClaim", ShortNames: []string{"pvc", "persistentvolumeclaim"}, Version: "v1",
		Namespaced: true, HasStatus: true, New: func() Object { return &PersistentVolumeClaim{} }}
	StorageClassesResource = Resource{Name: "storageclasses", Kind: "StorageClass", ShortNames: []string{"sc", "storageclass"}, Group: StorageGroup, Version: "v1",
		New: func() Object { return &StorageClass{} }}
	CustomResourceDefinitionsResource = Resource{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition", ShortNames: []string{"crd", "crds", "customresourcedefinition"},
		Group: APIExtensionsGroup, Version: "v1", HasStatus: true, New: func() Object { return &CustomResourceDefinition{} }}
	LeasesResource = Resource{Name: "leases", Kind: "Lease", ShortNames: []string{"lease"}, Group: "coordination.k8s.io", Version: "v1",
		Namespaced: true, New: func() Object { return &Lease{} }}
)

// The function kinds are stored, and served to the components, in their
// reference form under /api/v1 (paths that stay as aliases for users);
// kubectl and client-go see them in the minik8s.io/v1 group, where a Func
// shows its mode in the spec and its source as text: one object, two views.
const (
	FuncGroup        = "minik8s.io"
	FuncGroupVersion = FuncGroup + "/v1"
)

// FuncGroupResources are the kinds of the minik8s.io/v1 group.
var FuncGroupResources = []string{FuncsResource.Name, FuncInstancesResource.Name, TriggersResource.Name, AppsResource.Name, FuncRevisionsResource.Name}

// Served is the resource as discovery lists it: the function kinds in the
// minik8s.io group, the others as they are.
func (r Resource) Served() Resource {
	for _, n := range FuncGroupResources {
		if r.Name == n && r.Group == "" {
			r.Group = FuncGroup
		}
	}
	return r
}

// Resources lists every kind the apiserver serves.
var Resources = []Resource{
	NodesResource, PodsResource, ReplicaSetsResource, DeploymentsResource, DaemonSetsResource, StatefulSetsResource, ControllerRevisionsResource, HorizontalPodAutoscalersResource, JobsResource, CronJobsResource, ServicesResource,
	EndpointsResource, ConfigMapsResource, LimitRangesResource, ResourceQuotasResource, EventsResource, FuncsResource, FuncInstancesResource, TriggersResource, AppsResource, FuncRevisionsResource, LeasesResource,
	NamespacesResource, SecretsResource, ServiceAccountsResource, IngressesResource, IngressClassesResource, NetworkPoliciesResource, PodDisruptionBudgetsResource, PriorityClassesResource,
	PersistentVolumesResource, PersistentVolumeClaimsResource, StorageClassesResource,
	RolesResource, ClusterRolesResource, RoleBindingsResource, ClusterRoleBindingsResource, CustomResourceDefinitionsResource,
}

// OtherVersions are resources of Resources served in a second version
// too, their group's older one: the objects are stored, watched and
// listed as Resources has them, and converted for these routes.
var OtherVersions = []Resource{HorizontalPodAutoscalersV1Resource}

// LookupResource finds a resource by plural, singular, short name or kind,
// case-insensitively, as kubectl does.
func LookupResource(name string) (Resource, bool) {
	n := strings.ToLower(name)
	for _, r := range Resources {
		if n == r.Name || n == strings.ToLower(r.Kind) {
			return r, true
		}
		for _, s := range r.ShortNames {
			if n == s {
				return r, true
			}
		}
	}
	return Resource{}, false
}
