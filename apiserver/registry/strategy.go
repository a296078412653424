package registry

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/qos"
)

// strategy is what a kind adds to the generic registry's writes, as
// Kubernetes' rest.RESTCreateStrategy, RESTUpdateStrategy and
// RESTDeleteStrategy do: the registry looks it up by resource (strategyFor)
// and names no kind itself. A kind with nothing of its own takes
// defaultStrategy, whose hooks do nothing more than the generic path.
type strategy interface {
	// anyAPIVersion says a body may name any apiVersion (kind checked).
	anyAPIVersion() bool
	// prepareForCreate clears what a new object may not say (its status).
	prepareForCreate(obj api.Object)
	// create stores obj under key, with what it is allocated.
	create(ctx context.Context, r *Store, key string, obj api.Object) error
	// prepareForUpdate carries what the server gave cur over to next, or
	// refuses next changing it.
	prepareForUpdate(r *Store, cur, next api.Object) error
	// beginDelete does a kind's own deletion: done when it answered the
	// request (out, err) and the object is not to be removed now.
	beginDelete(ctx context.Context, r *Store, ns, name string, opts DeleteOptions, rv, uid string) (out api.Object, done bool, err error)
	// afterDelete frees what was allocated for a removed object.
	afterDelete(ctx context.Context, r *Store, obj api.Object)
}

// strategies are the kinds with hooks of their own, by resource name.
var strategies = map[string]strategy{
	api.PodsResource.Name:                      podStrategy{},
	api.ReplicaSetsResource.Name:               replicaSetStrategy{},
	api.FuncsResource.Name:                     funcStrategy{},
	api.TriggersResource.Name:                  triggerStrategy{},
	api.FuncRevisionsResource.Name:             funcRevisionStrategy{},
	api.JobsResource.Name:                      jobStrategy{},
	api.ServicesResource.Name:                  serviceStrategy{},
	api.NodesResource.Name:                     nodeStrategy{},
	api.NamespacesResource.Name:                namespaceStrategy{},
	api.DeploymentsResource.Name:               deploymentStrategy{},
	api.DaemonSetsResource.Name:                daemonSetStrategy{},
	api.ResourceQuotasResource.Name:            quotaStrategy{},
	api.CronJobsResource.Name:                  cronJobStrategy{},
	api.HorizontalPodAutoscalersResource.Name:  hpaStrategy{},
	api.IngressesResource.Name:                 ingressStrategy{},
	api.PodDisruptionBudgetsResource.Name:      pdbStrategy{},
	api.PriorityClassesResource.Name:           priorityClassStrategy{},
	api.CustomResourceDefinitionsResource.Name: crdStrategy{},
	api.PersistentVolumesResource.Name:         pvStrategy{},
	api.PersistentVolumeClaimsResource.Name:    pvcStrategy{},
	api.StatefulSetsResource.Name:              statefulSetStrategy{},
}

// strategyFor is the strategy of resource res.
func strategyFor(res api.Resource) strategy {
	if res.Custom {
		return customStrategy{status: res.HasStatus}
	}
	if s, ok := strategies[res.Name]; ok {
		return s
	}
	return defaultStrategy{}
}

// defaultStrategy is the generic path: the store alone.
type defaultStrategy struct{}

func (defaultStrategy) anyAPIVersion() bool { return false }

func (defaultStrategy) prepareForCreate(api.Object) {}

func (defaultStrategy) create(ctx context.Context, r *Store, key string, obj api.Object) error {
	return r.Storage.Create(ctx, key, obj, r.TTL)
}

func (defaultStrategy) prepareForUpdate(*Store, api.Object, api.Object) error { return nil }

func (defaultStrategy) beginDelete(context.Context, *Store, string, string, DeleteOptions, string, string) (api.Object, bool, error) {
	return nil, false, nil
}

func (defaultStrategy) afterDelete(context.Context, *Store, api.Object) {}

// priorityClassStrategy keeps the system classes, as Kubernetes'
// PriorityClass storage refuses deleting them.
type priorityClassStrategy struct{ defaultStrategy }

func (priorityClassStrategy) beginDelete(_ context.Context, _ *Store, _, name string, _ DeleteOptions, _, _ string) (api.Object, bool, error) {
	if name == api.SystemNodeCritical || name == api.SystemClusterCritical {
		return nil, true, fmt.Errorf("priorityclasses.scheduling.k8s.io %q is forbidden: this is a system priority class and cannot be deleted: %w", name, errdefs.ErrForbidden)
	}
	return nil, false, nil
}

// The status of a created object is the controllers' and kubelets' to set.
type (
	podStrategy         struct{ defaultStrategy }
	replicaSetStrategy  struct{ defaultStrategy }
	triggerStrategy     struct{ defaultStrategy }
	funcStrategy        struct{ defaultStrategy }
	deploymentStrategy  struct{ defaultStrategy }
	daemonSetStrategy   struct{ defaultStrategy }
	quotaStrategy       struct{ defaultStrategy }
	cronJobStrategy     struct{ defaultStrategy }
	hpaStrategy         struct{ defaultStrategy }
	ingressStrategy     struct{ defaultStrategy }
	pdbStrategy         struct{ defaultStrategy }
	pvStrategy          struct{ defaultStrategy }
	pvcStrategy         struct{ defaultStrategy }
	statefulSetStrategy struct{ defaultStrategy }
)

// A volume starts Pending and a claim Pending, as Kubernetes' strategies
// and defaults have them: their phases are the volume controller's.
func (pvStrategy) prepareForCreate(obj api.Object) {
	now := time.Now().UTC().Truncate(time.Second)
	obj.(*api.PersistentVolume).Status = api.PersistentVolumeStatus{Phase: api.VolumePending, LastPhaseTransitionTime: &now}
}

func (pvcStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.PersistentVolumeClaim).Status = api.PersistentVolumeClaimStatus{Phase: api.ClaimPending}
}

func (deploymentStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.Deployment).Status = api.DeploymentStatus{}
}

func (statefulSetStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.StatefulSet).Status = api.StatefulSetStatus{}
}

// A DaemonSet's template generation (Kubernetes' deprecated
// spec.templateGeneration, carried in v1 as an annotation its validation
// reads) starts at 1 and counts the template's changes, as Kubernetes'
// strategy keeps it: whatever a writer says of it.
func (daemonSetStrategy) prepareForCreate(obj api.Object) {
	ds := obj.(*api.DaemonSet)
	ds.Status = api.DaemonSetStatus{}
	setAnnotation(&ds.ObjectMeta, api.AnnotationDaemonSetTemplateGeneration, "1")
}

func (daemonSetStrategy) prepareForUpdate(_ *Store, cur, next api.Object) error {
	c, n := cur.(*api.DaemonSet), next.(*api.DaemonSet)
	gen, _ := strconv.ParseInt(c.Annotations[api.AnnotationDaemonSetTemplateGeneration], 10, 64)
	if gen < 1 {
		gen = 1
	}
	if !reflect.DeepEqual(c.Spec.Template, n.Spec.Template) {
		gen++
	}
	setAnnotation(&n.ObjectMeta, api.AnnotationDaemonSetTemplateGeneration, strconv.FormatInt(gen, 10))
	return nil
}

func setAnnotation(m *api.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

// A quota's usage is the quota controller's to count.
func (quotaStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.ResourceQuota).Status = api.ResourceQuotaStatus{}
}

func (cronJobStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.CronJob).Status = api.CronJobStatus{}
}

// An HPA's status (its last scale time, its conditions) is the
// autoscaler's, whatever a creator says, in either version.
func (ingressStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.Ingress).Status = api.IngressStatus{}
}

// A budget's status is the disruption controller's (and the evictions').
func (pdbStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.PodDisruptionBudget).Status = api.PodDisruptionBudgetStatus{}
}

func (hpaStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.HorizontalPodAutoscaler).Status = api.HorizontalPodAutoscalerStatus{}
}

// prepareForCreate clears what the client sent of the status; the pod's
// QoS class is set from its spec, as Kubernetes' strategy does. A new pod
// runs as its namespace's default service account unless it names one,
// as Kubernetes' ServiceAccount admission writes it (on create only, so
// that a pod stored without one may still be updated; templates are left
// as given, as there).
func (podStrategy) prepareForCreate(obj api.Object) {
	p := obj.(*api.Pod)
	p.Status = api.PodStatus{QOSClass: qos.Class(p)}
	if p.Spec.ServiceAccountName == "" && p.Spec.ServiceAccount == "" {
		p.Spec.ServiceAccountName = api.DefaultServiceAccount
	}
}

// prepareForUpdate keeps the service account the server gave the pod
// when an update names none (a manifest applied again, kubectl replace),
// as it keeps a Service's cluster IP: the account cannot change.
func (podStrategy) prepareForUpdate(_ *Store, cur, next api.Object) error {
	c, n := cur.(*api.Pod), next.(*api.Pod)
	if n.Spec.ServiceAccountName == "" && n.Spec.ServiceAccount == "" {
		n.Spec.ServiceAccountName, n.Spec.ServiceAccount = c.Spec.ServiceAccountName, c.Spec.ServiceAccount
	}
	// The priority admission set these at create; an update that does not
	// say them keeps them, as Kubernetes' plugin does on update.
	if n.Spec.Priority == nil {
		n.Spec.Priority = c.Spec.Priority
	}
	if n.Spec.PreemptionPolicy == nil {
		n.Spec.PreemptionPolicy = c.Spec.PreemptionPolicy
	}
	if n.Spec.PriorityClassName == "" {
		n.Spec.PriorityClassName = c.Spec.PriorityClassName
	}
	return nil
}

func (replicaSetStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.ReplicaSet).Status = api.ReplicaSetStatus{}
}

func (triggerStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.Trigger).Status = api.TriggerStatus{}
}

// A function's revision never changes once made: what ran as revision N
// stays what N names (its status, the pool serving it, is the function
// controller's).
type funcRevisionStrategy struct{ defaultStrategy }

func (funcRevisionStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.FuncRevision).Status = api.FuncRevisionStatus{}
}

func (funcRevisionStrategy) prepareForUpdate(_ *Store, cur, next api.Object) error {
	if !reflect.DeepEqual(cur.(*api.FuncRevision).Spec, next.(*api.FuncRevision).Spec) {
		return errdefs.Invalid("spec", "a revision never changes: change the function, which makes a new one")
	}
	return nil
}

// anyAPIVersion: the reference design's function bodies name their own.
func (funcStrategy) anyAPIVersion() bool { return true }

func (funcStrategy) prepareForCreate(obj api.Object) {
	f := obj.(*api.Func)
	if f.Name == "" {
		// The reference design names a function in spec.name.
		f.Name = f.Spec.Name
	}
	f.Status = api.FuncStatus{}
}

// beginDelete deletes a pod bound to a node gracefully, unless asked for
// a grace period of 0: it is marked with a deletion timestamp and its
// kubelet stops its containers and then removes it.
func (podStrategy) beginDelete(ctx context.Context, r *Store, ns, name string, opts DeleteOptions, rv, uid string) (api.Object, bool, error) {
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds <= 0 {
		return nil, false, nil
	}
	return r.markPodDeleted(ctx, ns, name, opts.GracePeriodSeconds, rv, uid)
}

// markPodDeleted sets the deletion timestamp of a bound pod. done is false
// when the pod is not bound (or has not started), so it can go at once.
func (r *Store) markPodDeleted(ctx context.Context, ns, name string, grace *int64, rv, uid string) (api.Object, bool, error) {
	obj, err := r.Mutate(ctx, ns, name, func(cur api.Object) (api.Object, error) {
		pod := cur.(*api.Pod)
		if rv != "" && rv != pod.ResourceVersion {
			return nil, fmt.Errorf("pod %q: resourceVersion %s is stale: %w", name, rv, errdefs.ErrConflict)
		}
		if uid != "" && uid != pod.UID {
			return nil, fmt.Errorf("pod %q: uid precondition %s does not match %s: %w", name, uid, pod.UID, errdefs.ErrConflict)
		}
		if pod.Spec.NodeName == "" || pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed {
			return nil, errNotGraceful
		}
		if pod.DeletionTimestamp != nil {
			return nil, errAlreadyMarked
		}
		g := int64(validation.DefaultTerminationGracePeriod)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			g = *pod.Spec.TerminationGracePeriodSeconds
		}
		if grace != nil {
			g = *grace
		}
		now := time.Now().UTC()
		pod.DeletionTimestamp = &now
		pod.DeletionGracePeriodSeconds = &g
		return pod, nil
	})
	switch {
	case err == errNotGraceful:
		return nil, false, nil
	case err == errAlreadyMarked:
		cur, err := r.Get(ctx, ns, name)
		return cur, true, err
	case err != nil:
		return nil, false, err
	}
	return obj, true, nil
}

var (
	errNotGraceful   = fmt.Errorf("not graceful")
	errAlreadyMarked = fmt.Errorf("already marked")
)

// jobStrategy keeps the selector the server gave a Job.
type jobStrategy struct{ defaultStrategy }

func (jobStrategy) prepareForCreate(obj api.Object) {
	obj.(*api.Job).Status = api.JobStatus{}
}

func (jobStrategy) prepareForUpdate(_ *Store, cur, next api.Object) error {
	keepJobSelector(cur, next)
	return nil
}

// namespaceStrategy: a namespace is not removed at once but marked
// Terminating, and emptied by the namespace controller.
type namespaceStrategy struct{ defaultStrategy }

func (namespaceStrategy) beginDelete(ctx context.Context, r *Store, _, name string, _ DeleteOptions, rv, _ string) (api.Object, bool, error) {
	out, err := r.deleteNamespace(ctx, name, rv)
	return out, true, err
}
