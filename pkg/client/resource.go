package client

import (
	"context"
	"net/http"
	"net/url"

	"minik8s/pkg/api"
)

// Object constrains PT to be a pointer to an API kind T.
type Object[T any] interface {
	*T
	api.Object
}

// ResourceClient is typed CRUD on one resource in one namespace.
type ResourceClient[T any, PT Object[T]] struct {
	c   *Client
	res api.Resource
	ns  string
}

func newResource[T any, PT Object[T]](c *Client, res api.Resource, ns string) *ResourceClient[T, PT] {
	if res.Namespaced && ns == "" {
		ns = api.DefaultNamespace
	}
	return &ResourceClient[T, PT]{c: c, res: res, ns: ns}
}

func (c *Client) Nodes() *ResourceClient[api.Node, *api.Node] {
	return newResource[api.Node](c, api.NodesResource, "")
}

func (c *Client) Pods(ns string) *ResourceClient[api.Pod, *api.Pod] {
	return newResource[api.Pod](c, api.PodsResource, ns)
}

func (c *Client) ReplicaSets(ns string) *ResourceClient[api.ReplicaSet, *api.ReplicaSet] {
	return newResource[api.ReplicaSet](c, api.ReplicaSetsResource, ns)
}

func (c *Client) Deployments(ns string) *ResourceClient[api.Deployment, *api.Deployment] {
	return newResource[api.Deployment](c, api.DeploymentsResource, ns)
}

func (c *Client) HorizontalPodAutoscalers(ns string) *ResourceClient[api.HorizontalPodAutoscaler, *api.HorizontalPodAutoscaler] {
	return newResource[api.HorizontalPodAutoscaler](c, api.HorizontalPodAutoscalersResource, ns)
}

func (c *Client) Jobs(ns string) *ResourceClient[api.Job, *api.Job] {
	return newResource[api.Job](c, api.JobsResource, ns)
}

func (c *Client) DaemonSets(ns string) *ResourceClient[api.DaemonSet, *api.DaemonSet] {
	return newResource[api.DaemonSet](c, api.DaemonSetsResource, ns)
}

func (c *Client) StatefulSets(ns string) *ResourceClient[api.StatefulSet, *api.StatefulSet] {
	return newResource[api.StatefulSet](c, api.StatefulSetsResource, ns)
}

func (c *Client) ControllerRevisions(ns string) *ResourceClient[api.ControllerRevision, *api.ControllerRevision] {
	return newResource[api.ControllerRevision](c, api.ControllerRevisionsResource, ns)
}

func (c *Client) LimitRanges(ns string) *ResourceClient[api.LimitRange, *api.LimitRange] {
	return newResource[api.LimitRange](c, api.LimitRangesResource, ns)
}

func (c *Client) ResourceQuotas(ns string) *ResourceClient[api.ResourceQuota, *api.ResourceQuota] {
	return newResource[api.ResourceQuota](c, api.ResourceQuotasResource, ns)
}

func (c *Client) Ingresses(ns string) *ResourceClient[api.Ingress, *api.Ingress] {
	return newResource[api.Ingress](c, api.IngressesResource, ns)
}

func (c *Client) IngressClasses() *ResourceClient[api.IngressClass, *api.IngressClass] {
	return newResource[api.IngressClass](c, api.IngressClassesResource, "")
}

func (c *Client) NetworkPolicies(ns string) *ResourceClient[api.NetworkPolicy, *api.NetworkPolicy] {
	return newResource[api.NetworkPolicy](c, api.NetworkPoliciesResource, ns)
}

func (c *Client) PodDisruptionBudgets(ns string) *ResourceClient[api.PodDisruptionBudget, *api.PodDisruptionBudget] {
	return newResource[api.PodDisruptionBudget](c, api.PodDisruptionBudgetsResource, ns)
}

func (c *Client) PriorityClasses() *ResourceClient[api.PriorityClass, *api.PriorityClass] {
	return newResource[api.PriorityClass](c, api.PriorityClassesResource, "")
}

func (c *Client) CronJobs(ns string) *ResourceClient[api.CronJob, *api.CronJob] {
	return newResource[api.CronJob](c, api.CronJobsResource, ns)
}

func (c *Client) Services(ns string) *ResourceClient[api.Service, *api.Service] {
	return newResource[api.Service](c, api.ServicesResource, ns)
}

func (c *Client) Endpoints(ns string) *ResourceClient[api.Endpoints, *api.Endpoints] {
	return newResource[api.Endpoints](c, api.EndpointsResource, ns)
}

func (c *Client) ConfigMaps(ns string) *ResourceClient[api.ConfigMap, *api.ConfigMap] {
	return newResource[api.ConfigMap](c, api.ConfigMapsResource, ns)
}

func (c *Client) Funcs(ns string) *ResourceClient[api.Func, *api.Func] {
	return newResource[api.Func](c, api.FuncsResource, ns)
}

func (c *Client) FuncRevisions(ns string) *ResourceClient[api.FuncRevision, *api.FuncRevision] {
	return newResource[api.FuncRevision](c, api.FuncRevisionsResource, ns)
}

func (c *Client) Apps(ns string) *ResourceClient[api.App, *api.App] {
	return newResource[api.App](c, api.AppsResource, ns)
}

func (c *Client) Triggers(ns string) *ResourceClient[api.Trigger, *api.Trigger] {
	return newResource[api.Trigger](c, api.TriggersResource, ns)
}

func (c *Client) FuncInstances(ns string) *ResourceClient[api.FuncInstance, *api.FuncInstance] {
	return newResource[api.FuncInstance](c, api.FuncInstancesResource, ns)
}

func (c *Client) Events(ns string) *ResourceClient[api.Event, *api.Event] {
	return newResource[api.Event](c, api.EventsResource, ns)
}

func (c *Client) Leases(ns string) *ResourceClient[api.Lease, *api.Lease] {
	return newResource[api.Lease](c, api.LeasesResource, ns)
}

func (c *Client) Namespaces() *ResourceClient[api.Namespace, *api.Namespace] {
	return newResource[api.Namespace](c, api.NamespacesResource, "")
}

func (c *Client) Secrets(ns string) *ResourceClient[api.Secret, *api.Secret] {
	return newResource[api.Secret](c, api.SecretsResource, ns)
}

func (c *Client) Roles(ns string) *ResourceClient[api.Role, *api.Role] {
	return newResource[api.Role](c, api.RolesResource, ns)
}

func (c *Client) ClusterRoles() *ResourceClient[api.ClusterRole, *api.ClusterRole] {
	return newResource[api.ClusterRole](c, api.ClusterRolesResource, "")
}

func (c *Client) RoleBindings(ns string) *ResourceClient[api.RoleBinding, *api.RoleBinding] {
	return newResource[api.RoleBinding](c, api.RoleBindingsResource, ns)
}

func (c *Client) ClusterRoleBindings() *ResourceClient[api.ClusterRoleBinding, *api.ClusterRoleBinding] {
	return newResource[api.ClusterRoleBinding](c, api.ClusterRoleBindingsResource, "")
}

func (c *Client) ServiceAccounts(ns string) *ResourceClient[api.ServiceAccount, *api.ServiceAccount] {
	return newResource[api.ServiceAccount](c, api.ServiceAccountsResource, ns)
}

// AllNamespaces returns a client of the same resource listing every namespace.
func (r *ResourceClient[T, PT]) AllNamespaces() *ResourceClient[T, PT] {
	return &ResourceClient[T, PT]{c: r.c, res: r.res, ns: ""}
}

func (r *ResourceClient[T, PT]) path(name string) string {
	return r.res.Path(r.ns, url.PathEscape(name))
}

func (r *ResourceClient[T, PT]) Get(ctx context.Context, name string) (PT, error) {
	out := PT(new(T))
	if err := r.c.Do(ctx, http.MethodGet, r.path(name), nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// List returns the matching objects and the version they were read at.
func (r *ResourceClient[T, PT]) List(ctx context.Context, opts ListOptions) ([]PT, string, error) {
	var list struct {
		api.ListMeta `json:"metadata"`
		Items        []T `json:"items"`
	}
	if err := r.c.Do(ctx, http.MethodGet, r.path("")+opts.query(false), nil, &list); err != nil {
		return nil, "", err
	}
	out := make([]PT, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, list.ResourceVersion, nil
}

func (r *ResourceClient[T, PT]) Create(ctx context.Context, obj PT) (PT, error) {
	out := PT(new(T))
	if err := r.c.Do(ctx, http.MethodPost, r.path(""), obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Update replaces the object; a resourceVersion on obj makes it conditional.
func (r *ResourceClient[T, PT]) Update(ctx context.Context, obj PT) (PT, error) {
	out := PT(new(T))
	if err := r.c.Do(ctx, http.MethodPut, r.path(obj.GetObjectMeta().Name), obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateStatus replaces only the status.
func (r *ResourceClient[T, PT]) UpdateStatus(ctx context.Context, obj PT) (PT, error) {
	out := PT(new(T))
	if err := r.c.Do(ctx, http.MethodPut, r.path(obj.GetObjectMeta().Name)+"/status", obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteOptions of a delete.
type DeleteOptions struct {
	// GracePeriodSeconds: nil uses the object's own; 0 deletes a pod at once.
	GracePeriodSeconds *int64
	// ResourceVersion and UID, when set, must match the stored object.
	ResourceVersion string
	UID             string
}

// body is the DeleteOptions a delete sends, nil when there are none: in
// the body, which the apiserver then reads alone, as Kubernetes does.
func (o DeleteOptions) body() any {
	if o.GracePeriodSeconds == nil && o.ResourceVersion == "" && o.UID == "" {
		return nil
	}
	opts := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1"}
	if o.GracePeriodSeconds != nil {
		opts["gracePeriodSeconds"] = *o.GracePeriodSeconds
	}
	if o.ResourceVersion != "" || o.UID != "" {
		pre := map[string]string{}
		if o.ResourceVersion != "" {
			pre["resourceVersion"] = o.ResourceVersion
		}
		if o.UID != "" {
			pre["uid"] = o.UID
		}
		opts["preconditions"] = pre
	}
	return opts
}

// Delete deletes the object (a bound pod is only marked; its kubelet
// removes it) and returns its last state.
func (r *ResourceClient[T, PT]) Delete(ctx context.Context, name string, opts DeleteOptions) (PT, error) {
	path := r.path(name)
	body := opts.body()
	out := PT(new(T))
	if err := r.c.Do(ctx, http.MethodDelete, path, body, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Bind assigns a pod to a node; it fails with ErrConflict when the pod is
// already bound.
func (c *Client) Bind(ctx context.Context, ns, pod, uid, node string) error {
	b := api.Binding{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: api.ObjectMeta{Name: pod, Namespace: ns, UID: uid},
		Target:     api.ObjectReference{Kind: "Node", Name: node},
	}
	return c.Do(ctx, http.MethodPost, api.PodsResource.Path(ns, pod)+"/binding", b, nil)
}

// GetScale reads a ReplicaSet's scale subresource.
func (c *Client) GetScale(ctx context.Context, ns, name string) (*api.Scale, error) {
	var sc api.Scale
	if err := c.Do(ctx, http.MethodGet, api.ReplicaSetsResource.Path(ns, name)+"/scale", nil, &sc); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Scale sets a ReplicaSet's replicas.
func (c *Client) Scale(ctx context.Context, ns, name string, replicas int32) (*api.Scale, error) {
	sc := api.Scale{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns}, Spec: api.ScaleSpec{Replicas: replicas}}
	var out api.Scale
	if err := c.Do(ctx, http.MethodPut, api.ReplicaSetsResource.Path(ns, name)+"/scale", sc, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateToken asks for a token of service account name (TokenRequest).
func (r *ResourceClient[T, PT]) CreateToken(ctx context.Context, name string, req *api.TokenRequest) (*api.TokenRequest, error) {
	out := &api.TokenRequest{}
	if err := r.c.Do(ctx, http.MethodPost, r.path(name)+"/token", req, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Client) PersistentVolumes() *ResourceClient[api.PersistentVolume, *api.PersistentVolume] {
	return newResource[api.PersistentVolume](c, api.PersistentVolumesResource, "")
}

func (c *Client) PersistentVolumeClaims(ns string) *ResourceClient[api.PersistentVolumeClaim, *api.PersistentVolumeClaim] {
	return newResource[api.PersistentVolumeClaim](c, api.PersistentVolumeClaimsResource, ns)
}

func (c *Client) StorageClasses() *ResourceClient[api.StorageClass, *api.StorageClass] {
	return newResource[api.StorageClass](c, api.StorageClassesResource, "")
}
