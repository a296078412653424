package cache

import (
	"context"
	"sync"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// Factory shares one informer per resource among the controllers of a
// process, so each resource is listed and watched once.
type Factory struct {
	c    *client.Client
	opts []Option

	mu        sync.Mutex
	informers map[string]runner
	ctx       context.Context
}

type runner interface {
	Start(ctx context.Context)
	HasSynced() bool
}

// NewFactory returns a factory of informers over every namespace.
func NewFactory(c *client.Client, opts ...Option) *Factory {
	return &Factory{c: c, opts: opts, informers: map[string]runner{}}
}

// shared returns the informer of a resource, making it on first use. An
// informer made after Start is started at once.
func shared[T any, PT client.Object[T]](f *Factory, res api.Resource, lw ListerWatcher[PT]) *Informer[T, PT] {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[res.Name]; ok {
		return inf.(*Informer[T, PT])
	}
	inf := NewInformer[T](lw, f.opts...)
	f.informers[res.Name] = inf
	if f.ctx != nil {
		inf.Start(f.ctx)
	}
	return inf
}

func (f *Factory) Nodes() *Informer[api.Node, *api.Node] {
	return shared[api.Node](f, api.NodesResource, f.c.Nodes())
}

func (f *Factory) Pods() *Informer[api.Pod, *api.Pod] {
	return shared[api.Pod](f, api.PodsResource, f.c.Pods("").AllNamespaces())
}

func (f *Factory) ReplicaSets() *Informer[api.ReplicaSet, *api.ReplicaSet] {
	return shared[api.ReplicaSet](f, api.ReplicaSetsResource, f.c.ReplicaSets("").AllNamespaces())
}

func (f *Factory) DaemonSets() *Informer[api.DaemonSet, *api.DaemonSet] {
	return shared[api.DaemonSet](f, api.DaemonSetsResource, f.c.DaemonSets("").AllNamespaces())
}

func (f *Factory) StatefulSets() *Informer[api.StatefulSet, *api.StatefulSet] {
	return shared[api.StatefulSet](f, api.StatefulSetsResource, f.c.StatefulSets("").AllNamespaces())
}

func (f *Factory) ControllerRevisions() *Informer[api.ControllerRevision, *api.ControllerRevision] {
	return shared[api.ControllerRevision](f, api.ControllerRevisionsResource, f.c.ControllerRevisions("").AllNamespaces())
}

func (f *Factory) ResourceQuotas() *Informer[api.ResourceQuota, *api.ResourceQuota] {
	return shared[api.ResourceQuota](f, api.ResourceQuotasResource, f.c.ResourceQuotas("").AllNamespaces())
}

func (f *Factory) Ingresses() *Informer[api.Ingress, *api.Ingress] {
	return shared[api.Ingress](f, api.IngressesResource, f.c.Ingresses("").AllNamespaces())
}

func (f *Factory) IngressClasses() *Informer[api.IngressClass, *api.IngressClass] {
	return shared[api.IngressClass](f, api.IngressClassesResource, f.c.IngressClasses())
}

func (f *Factory) NetworkPolicies() *Informer[api.NetworkPolicy, *api.NetworkPolicy] {
	return shared[api.NetworkPolicy](f, api.NetworkPoliciesResource, f.c.NetworkPolicies("").AllNamespaces())
}

func (f *Factory) PodDisruptionBudgets() *Informer[api.PodDisruptionBudget, *api.PodDisruptionBudget] {
	return shared[api.PodDisruptionBudget](f, api.PodDisruptionBudgetsResource, f.c.PodDisruptionBudgets("").AllNamespaces())
}

func (f *Factory) PriorityClasses() *Informer[api.PriorityClass, *api.PriorityClass] {
	return shared[api.PriorityClass](f, api.PriorityClassesResource, f.c.PriorityClasses())
}

func (f *Factory) PersistentVolumes() *Informer[api.PersistentVolume, *api.PersistentVolume] {
	return shared[api.PersistentVolume](f, api.PersistentVolumesResource, f.c.PersistentVolumes())
}

func (f *Factory) PersistentVolumeClaims() *Informer[api.PersistentVolumeClaim, *api.PersistentVolumeClaim] {
	return shared[api.PersistentVolumeClaim](f, api.PersistentVolumeClaimsResource, f.c.PersistentVolumeClaims("").AllNamespaces())
}

func (f *Factory) StorageClasses() *Informer[api.StorageClass, *api.StorageClass] {
	return shared[api.StorageClass](f, api.StorageClassesResource, f.c.StorageClasses())
}

func (f *Factory) Deployments() *Informer[api.Deployment, *api.Deployment] {
	return shared[api.Deployment](f, api.DeploymentsResource, f.c.Deployments("").AllNamespaces())
}

func (f *Factory) HorizontalPodAutoscalers() *Informer[api.HorizontalPodAutoscaler, *api.HorizontalPodAutoscaler] {
	return shared[api.HorizontalPodAutoscaler](f, api.HorizontalPodAutoscalersResource, f.c.HorizontalPodAutoscalers("").AllNamespaces())
}

func (f *Factory) Jobs() *Informer[api.Job, *api.Job] {
	return shared[api.Job](f, api.JobsResource, f.c.Jobs("").AllNamespaces())
}

func (f *Factory) CronJobs() *Informer[api.CronJob, *api.CronJob] {
	return shared[api.CronJob](f, api.CronJobsResource, f.c.CronJobs("").AllNamespaces())
}

func (f *Factory) Services() *Informer[api.Service, *api.Service] {
	return shared[api.Service](f, api.ServicesResource, f.c.Services("").AllNamespaces())
}

func (f *Factory) Endpoints() *Informer[api.Endpoints, *api.Endpoints] {
	return shared[api.Endpoints](f, api.EndpointsResource, f.c.Endpoints("").AllNamespaces())
}

func (f *Factory) ConfigMaps() *Informer[api.ConfigMap, *api.ConfigMap] {
	return shared[api.ConfigMap](f, api.ConfigMapsResource, f.c.ConfigMaps("").AllNamespaces())
}

func (f *Factory) Funcs() *Informer[api.Func, *api.Func] {
	return shared[api.Func](f, api.FuncsResource, f.c.Funcs("").AllNamespaces())
}

func (f *Factory) Triggers() *Informer[api.Trigger, *api.Trigger] {
	return shared[api.Trigger](f, api.TriggersResource, f.c.Triggers("").AllNamespaces())
}

func (f *Factory) FuncRevisions() *Informer[api.FuncRevision, *api.FuncRevision] {
	return shared[api.FuncRevision](f, api.FuncRevisionsResource, f.c.FuncRevisions("").AllNamespaces())
}

func (f *Factory) Apps() *Informer[api.App, *api.App] {
	return shared[api.App](f, api.AppsResource, f.c.Apps("").AllNamespaces())
}

func (f *Factory) Leases() *Informer[api.Lease, *api.Lease] {
	return shared[api.Lease](f, api.LeasesResource, f.c.Leases("").AllNamespaces())
}

func (f *Factory) Namespaces() *Informer[api.Namespace, *api.Namespace] {
	return shared[api.Namespace](f, api.NamespacesResource, f.c.Namespaces())
}

func (f *Factory) Secrets() *Informer[api.Secret, *api.Secret] {
	return shared[api.Secret](f, api.SecretsResource, f.c.Secrets("").AllNamespaces())
}

func (f *Factory) ServiceAccounts() *Informer[api.ServiceAccount, *api.ServiceAccount] {
	return shared[api.ServiceAccount](f, api.ServiceAccountsResource, f.c.ServiceAccounts("").AllNamespaces())
}

// Start starts every informer made so far, and those made later, until ctx ends.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctx = ctx
	for _, inf := range f.informers {
		inf.Start(ctx)
	}
}

// WaitForSync waits until every informer made so far has synced; false if
// ctx ended first.
func (f *Factory) WaitForSync(ctx context.Context) bool {
	f.mu.Lock()
	all := make([]interface{ HasSynced() bool }, 0, len(f.informers))
	for _, inf := range f.informers {
		all = append(all, inf)
	}
	f.mu.Unlock()
	return WaitForSync(ctx, all...)
}
