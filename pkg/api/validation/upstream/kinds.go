package upstream

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/apis/coordination"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	coordinationvalidation "k8s.io/kubernetes/pkg/apis/coordination/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/networking"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	networkingvalidation "k8s.io/kubernetes/pkg/apis/networking/validation"
	"k8s.io/kubernetes/pkg/apis/policy"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	policyvalidation "k8s.io/kubernetes/pkg/apis/policy/validation"
	"k8s.io/kubernetes/pkg/apis/rbac"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"
	"k8s.io/kubernetes/pkg/apis/scheduling"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	schedulingvalidation "k8s.io/kubernetes/pkg/apis/scheduling/validation"
	"k8s.io/kubernetes/pkg/apis/storage"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	storagevalidation "k8s.io/kubernetes/pkg/apis/storage/validation"
	"k8s.io/kubernetes/pkg/features"
	volumevalidation "k8s.io/kubernetes/pkg/volume/validation"
)

// CustomResourceDefinitions are judged as apiextensions-apiserver judges
// them: its types join the scheme the others are converted in.
func init() { apiextinstall.Install(legacyscheme.Scheme) }

// kind is one resource's strategy, as pkg/registry/<group>/<resource> has
// it: the versioned type minik8s serves, and the rules for a create, an
// update and a write of the status.
type kind struct {
	gvk    schema.GroupVersionKind
	create func(obj runtime.Object) field.ErrorList
	update func(obj, old runtime.Object) field.ErrorList
	// status is nil where minik8s serves no status subresource.
	status func(obj, old runtime.Object) field.ErrorList
	// options are the declarative rules' options (the strategy's
	// DeclarativeValidationConfig), on the versioned objects.
	options func(obj, old runtime.Object) map[string]bool
	// adapt, if set, brings a versioned object from where minik8s's API
	// differs from Kubernetes' (adapt.go).
	adapt func(obj runtime.Object)
}

func gvk(group, version, k string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: k}
}

// kinds, by minik8s kind name; every Kubernetes kind api.Resources lists.
var kinds = map[string]kind{
	"Pod": {
		gvk: gvk("", "v1", "Pod"),
		create: func(obj runtime.Object) field.ErrorList {
			p := obj.(*core.Pod)
			opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, nil, &p.ObjectMeta, nil)
			opts.ResourceIsPod = true
			return corevalidation.ValidatePodCreate(p, opts)
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*core.Pod), old.(*core.Pod)
			opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &o.Spec, &p.ObjectMeta, &o.ObjectMeta)
			opts.ResourceIsPod = true
			return corevalidation.ValidatePodUpdate(p, o, opts)
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			p, o := obj.(*core.Pod), old.(*core.Pod)
			opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, &o.Spec, &p.ObjectMeta, &o.ObjectMeta)
			opts.ResourceIsPod = true
			return corevalidation.ValidatePodStatusUpdate(p, o, opts)
		},
		adapt: adaptPod,
	},
	"Service": {
		gvk: gvk("", "v1", "Service"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateServiceCreate(obj.(*core.Service))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateServiceUpdate(obj.(*core.Service), old.(*core.Service))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateServiceStatusUpdate(obj.(*core.Service), old.(*core.Service))
		},
		adapt: adaptService,
	},
	"Node": {
		gvk:    gvk("", "v1", "Node"),
		create: func(obj runtime.Object) field.ErrorList { return corevalidation.ValidateNode(obj.(*core.Node)) },
		update: func(obj, old runtime.Object) field.ErrorList {
			return append(corevalidation.ValidateNode(obj.(*core.Node)), corevalidation.ValidateNodeUpdate(obj.(*core.Node), old.(*core.Node))...)
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateNodeUpdate(obj.(*core.Node), old.(*core.Node))
		},
		options: gates(features.InPlacePodVerticalScalingSchedulerPreemption),
	},
	"Namespace": {
		gvk: gvk("", "v1", "Namespace"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateNamespace(obj.(*core.Namespace))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return append(corevalidation.ValidateNamespace(obj.(*core.Namespace)), corevalidation.ValidateNamespaceUpdate(obj.(*core.Namespace), old.(*core.Namespace))...)
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateNamespaceStatusUpdate(obj.(*core.Namespace), old.(*core.Namespace))
		},
	},
	"Secret": {
		gvk:    gvk("", "v1", "Secret"),
		create: func(obj runtime.Object) field.ErrorList { return corevalidation.ValidateSecret(obj.(*core.Secret)) },
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateSecretUpdate(obj.(*core.Secret), old.(*core.Secret))
		},
	},
	"ConfigMap": {
		gvk: gvk("", "v1", "ConfigMap"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateConfigMap(obj.(*core.ConfigMap))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateConfigMapUpdate(obj.(*core.ConfigMap), old.(*core.ConfigMap))
		},
	},
	"LimitRange": {
		gvk: gvk("", "v1", "LimitRange"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateLimitRange(obj.(*core.LimitRange))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateLimitRange(obj.(*core.LimitRange))
		},
	},
	"ResourceQuota": {
		gvk: gvk("", "v1", "ResourceQuota"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateResourceQuota(obj.(*core.ResourceQuota))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateResourceQuotaUpdate(obj.(*core.ResourceQuota), old.(*core.ResourceQuota))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateResourceQuotaStatusUpdate(obj.(*core.ResourceQuota), old.(*core.ResourceQuota))
		},
	},
	"ServiceAccount": {
		gvk: gvk("", "v1", "ServiceAccount"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateServiceAccount(obj.(*core.ServiceAccount))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateServiceAccountUpdate(obj.(*core.ServiceAccount), old.(*core.ServiceAccount))
		},
	},
	"Endpoints": {
		gvk: gvk("", "v1", "Endpoints"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateEndpointsCreate(obj.(*core.Endpoints))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateEndpointsUpdate(obj.(*core.Endpoints), old.(*core.Endpoints))
		},
		adapt: adaptEndpoints,
	},
	"Event": {
		gvk: gvk("", "v1", "Event"),
		create: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidateEventCreate(obj.(*core.Event), corev1.SchemeGroupVersion)
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidateEventUpdate(obj.(*core.Event), old.(*core.Event), corev1.SchemeGroupVersion)
		},
	},
	"Deployment": {
		gvk: gvk("apps", "v1", "Deployment"),
		create: func(obj runtime.Object) field.ErrorList {
			d := obj.(*apps.Deployment)
			return appsvalidation.ValidateDeployment(d, podutil.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			d, o := obj.(*apps.Deployment), old.(*apps.Deployment)
			return appsvalidation.ValidateDeploymentUpdate(d, o, podutil.GetValidationOptionsFromPodTemplate(&d.Spec.Template, &o.Spec.Template))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateDeploymentStatusUpdate(obj.(*apps.Deployment), old.(*apps.Deployment))
		},
		adapt: adaptTemplate,
	},
	"DaemonSet": {
		gvk: gvk("apps", "v1", "DaemonSet"),
		create: func(obj runtime.Object) field.ErrorList {
			d := obj.(*apps.DaemonSet)
			return appsvalidation.ValidateDaemonSet(d, podutil.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			d, o := obj.(*apps.DaemonSet), old.(*apps.DaemonSet)
			return appsvalidation.ValidateDaemonSetUpdate(d, o, podutil.GetValidationOptionsFromPodTemplate(&d.Spec.Template, &o.Spec.Template))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateDaemonSetStatusUpdate(obj.(*apps.DaemonSet), old.(*apps.DaemonSet))
		},
		adapt: adaptTemplate,
	},
	"StatefulSet": {
		gvk: gvk("apps", "v1", "StatefulSet"),
		// The options are Kubernetes' strategy's: a valid serviceName on
		// create, the immutable ones tolerated on update; no Recreate.
		create: func(obj runtime.Object) field.ErrorList {
			s := obj.(*apps.StatefulSet)
			return appsvalidation.ValidateStatefulSet(s, appsvalidation.StatefulSetValidationOptions{},
				podutil.GetValidationOptionsFromPodTemplate(&s.Spec.Template, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			s, o := obj.(*apps.StatefulSet), old.(*apps.StatefulSet)
			setOpts := appsvalidation.StatefulSetValidationOptions{AllowInvalidServiceName: true, SkipValidateVolumeClaimTemplates: true}
			return appsvalidation.ValidateStatefulSetUpdate(s, o, setOpts, podutil.GetValidationOptionsFromPodTemplate(&s.Spec.Template, &o.Spec.Template))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateStatefulSetStatusUpdate(obj.(*apps.StatefulSet), old.(*apps.StatefulSet))
		},
		adapt: adaptTemplate,
	},
	"ControllerRevision": {
		gvk: gvk("apps", "v1", "ControllerRevision"),
		create: func(obj runtime.Object) field.ErrorList {
			return appsvalidation.ValidateControllerRevisionCreate(obj.(*apps.ControllerRevision))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateControllerRevisionUpdate(obj.(*apps.ControllerRevision), old.(*apps.ControllerRevision))
		},
	},
	"Ingress": {
		gvk: gvk("networking.k8s.io", "v1", "Ingress"),
		create: func(obj runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateIngressCreate(obj.(*networking.Ingress))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateIngressUpdate(obj.(*networking.Ingress), old.(*networking.Ingress))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateIngressStatusUpdate(obj.(*networking.Ingress), old.(*networking.Ingress))
		},
	},
	"NetworkPolicy": {
		gvk: gvk("networking.k8s.io", "v1", "NetworkPolicy"),
		create: func(obj runtime.Object) field.ErrorList {
			np := obj.(*networking.NetworkPolicy)
			return networkingvalidation.ValidateNetworkPolicy(np, networkingvalidation.ValidationOptionsForNetworking(np, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			np, o := obj.(*networking.NetworkPolicy), old.(*networking.NetworkPolicy)
			return networkingvalidation.ValidateNetworkPolicyUpdate(np, o, networkingvalidation.ValidationOptionsForNetworking(np, o))
		},
	},
	"IngressClass": {
		gvk: gvk("networking.k8s.io", "v1", "IngressClass"),
		create: func(obj runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateIngressClass(obj.(*networking.IngressClass))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return networkingvalidation.ValidateIngressClassUpdate(obj.(*networking.IngressClass), old.(*networking.IngressClass))
		},
	},
	"CustomResourceDefinition": {
		gvk: gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
		create: func(obj runtime.Object) field.ErrorList {
			return apiextvalidation.ValidateCustomResourceDefinition(context.Background(), obj.(*apiextensions.CustomResourceDefinition))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return apiextvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), obj.(*apiextensions.CustomResourceDefinition), old.(*apiextensions.CustomResourceDefinition))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return apiextvalidation.ValidateUpdateCustomResourceDefinitionStatus(context.Background(), obj.(*apiextensions.CustomResourceDefinition), old.(*apiextensions.CustomResourceDefinition))
		},
	},
	"PodDisruptionBudget": {
		gvk: gvk("policy", "v1", "PodDisruptionBudget"),
		create: func(obj runtime.Object) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(obj.(*policy.PodDisruptionBudget), policyvalidation.PodDisruptionBudgetValidationOptions{})
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(obj.(*policy.PodDisruptionBudget), policyvalidation.PodDisruptionBudgetValidationOptions{})
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudgetStatusUpdate(obj.(*policy.PodDisruptionBudget).Status,
				old.(*policy.PodDisruptionBudget).Status, field.NewPath("status"), schema.GroupVersion{Group: "policy", Version: "v1"})
		},
	},
	"PriorityClass": {
		gvk: gvk("scheduling.k8s.io", "v1", "PriorityClass"),
		create: func(obj runtime.Object) field.ErrorList {
			return schedulingvalidation.ValidatePriorityClass(obj.(*scheduling.PriorityClass))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return schedulingvalidation.ValidatePriorityClassUpdate(obj.(*scheduling.PriorityClass), old.(*scheduling.PriorityClass))
		},
	},
	// The volumes' rules are their strategies' (pkg/registry/core/
	// persistentvolume{,claim}, pkg/registry/storage/storageclass): a
	// claim's spec is immutable but for its volumeName, set once, and
	// what Kubernetes lets grow.
	"PersistentVolume": {
		gvk: gvk("", "v1", "PersistentVolume"),
		create: func(obj runtime.Object) field.ErrorList {
			pv := obj.(*core.PersistentVolume)
			errs := corevalidation.ValidatePersistentVolume(pv, corevalidation.ValidationOptionsForPersistentVolume(pv, nil))
			return append(errs, volumevalidation.ValidatePersistentVolume(pv)...)
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			pv, o := obj.(*core.PersistentVolume), old.(*core.PersistentVolume)
			opts := corevalidation.ValidationOptionsForPersistentVolume(pv, o)
			errs := corevalidation.ValidatePersistentVolume(pv, opts)
			errs = append(errs, volumevalidation.ValidatePersistentVolume(pv)...)
			return append(errs, corevalidation.ValidatePersistentVolumeUpdate(pv, o, opts)...)
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidatePersistentVolumeStatusUpdate(obj.(*core.PersistentVolume), old.(*core.PersistentVolume))
		},
	},
	"PersistentVolumeClaim": {
		gvk: gvk("", "v1", "PersistentVolumeClaim"),
		create: func(obj runtime.Object) field.ErrorList {
			pvc := obj.(*core.PersistentVolumeClaim)
			return corevalidation.ValidatePersistentVolumeClaim(pvc, corevalidation.ValidationOptionsForPersistentVolumeClaim(pvc, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			pvc, o := obj.(*core.PersistentVolumeClaim), old.(*core.PersistentVolumeClaim)
			return corevalidation.ValidatePersistentVolumeClaimUpdate(pvc, o, corevalidation.ValidationOptionsForPersistentVolumeClaim(pvc, o))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			pvc, o := obj.(*core.PersistentVolumeClaim), old.(*core.PersistentVolumeClaim)
			return corevalidation.ValidatePersistentVolumeClaimStatusUpdate(pvc, o, corevalidation.ValidationOptionsForPersistentVolumeClaim(pvc, o))
		},
	},
	"StorageClass": {
		gvk: gvk("storage.k8s.io", "v1", "StorageClass"),
		create: func(obj runtime.Object) field.ErrorList {
			return storagevalidation.ValidateStorageClass(obj.(*storage.StorageClass))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			sc := obj.(*storage.StorageClass)
			return append(storagevalidation.ValidateStorageClass(sc), storagevalidation.ValidateStorageClassUpdate(sc, old.(*storage.StorageClass))...)
		},
	},
	"ReplicaSet": {
		gvk: gvk("apps", "v1", "ReplicaSet"),
		create: func(obj runtime.Object) field.ErrorList {
			rs := obj.(*apps.ReplicaSet)
			return appsvalidation.ValidateReplicaSet(rs, podutil.GetValidationOptionsFromPodTemplate(&rs.Spec.Template, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			rs, o := obj.(*apps.ReplicaSet), old.(*apps.ReplicaSet)
			return appsvalidation.ValidateReplicaSetUpdate(rs, o, podutil.GetValidationOptionsFromPodTemplate(&rs.Spec.Template, &o.Spec.Template))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateReplicaSetStatusUpdate(obj.(*apps.ReplicaSet), old.(*apps.ReplicaSet))
		},
		adapt: adaptTemplate,
	},
	"Job": {
		gvk: gvk("batch", "v1", "Job"),
		create: func(obj runtime.Object) field.ErrorList {
			j := obj.(*batch.Job)
			return batchvalidation.ValidateJobCreate(j, jobOptions(j, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			j, o := obj.(*batch.Job), old.(*batch.Job)
			return batchvalidation.ValidateJobUpdate(j, o, jobOptions(j, o))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			j, o := obj.(*batch.Job), old.(*batch.Job)
			return batchvalidation.ValidateJobUpdateStatus(j, o, jobStatusOptions(j, o))
		},
		options: gates(features.WorkloadWithJob),
		adapt:   adaptTemplate,
	},
	"CronJob": {
		gvk: gvk("batch", "v1", "CronJob"),
		create: func(obj runtime.Object) field.ErrorList {
			c := obj.(*batch.CronJob)
			return batchvalidation.ValidateCronJobCreate(c, podutil.GetValidationOptionsFromPodTemplate(&c.Spec.JobTemplate.Spec.Template, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			c, o := obj.(*batch.CronJob), old.(*batch.CronJob)
			return batchvalidation.ValidateCronJobUpdate(c, o, podutil.GetValidationOptionsFromPodTemplate(&c.Spec.JobTemplate.Spec.Template, &o.Spec.JobTemplate.Spec.Template))
		},
		// Kubernetes judges nothing in a CronJob's status.
		status:  func(obj, old runtime.Object) field.ErrorList { return nil },
		options: gates(features.WorkloadWithJob),
		adapt:   adaptTemplate,
	},
	"HorizontalPodAutoscaler": {
		gvk: gvk("autoscaling", "v2", "HorizontalPodAutoscaler"),
		create: func(obj runtime.Object) field.ErrorList {
			h := obj.(*autoscaling.HorizontalPodAutoscaler)
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, hpaOptions(h, nil))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			h, o := obj.(*autoscaling.HorizontalPodAutoscaler), old.(*autoscaling.HorizontalPodAutoscaler)
			return autoscalingvalidation.ValidateHorizontalPodAutoscalerUpdate(h, o, hpaOptions(h, o))
		},
		status: func(obj, old runtime.Object) field.ErrorList {
			return autoscalingvalidation.ValidateHorizontalPodAutoscalerStatusUpdate(obj.(*autoscaling.HorizontalPodAutoscaler), old.(*autoscaling.HorizontalPodAutoscaler))
		},
		options: hpaDeclarativeOptions,
	},
	"Role": {
		gvk:    gvk(rbac.GroupName, "v1", "Role"),
		create: func(obj runtime.Object) field.ErrorList { return rbacvalidation.ValidateRole(obj.(*rbac.Role)) },
		update: func(obj, old runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateRoleUpdate(obj.(*rbac.Role), old.(*rbac.Role))
		},
	},
	"ClusterRole": {
		gvk: gvk(rbac.GroupName, "v1", "ClusterRole"),
		create: func(obj runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateClusterRole(obj.(*rbac.ClusterRole), rbacvalidation.ClusterRoleValidationOptions{})
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			c, o := obj.(*rbac.ClusterRole), old.(*rbac.ClusterRole)
			return rbacvalidation.ValidateClusterRoleUpdate(c, o, clusterRoleOptions(o))
		},
	},
	"RoleBinding": {
		gvk: gvk(rbac.GroupName, "v1", "RoleBinding"),
		create: func(obj runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateRoleBinding(obj.(*rbac.RoleBinding))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateRoleBindingUpdate(obj.(*rbac.RoleBinding), old.(*rbac.RoleBinding))
		},
	},
	"ClusterRoleBinding": {
		gvk: gvk(rbac.GroupName, "v1", "ClusterRoleBinding"),
		create: func(obj runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateClusterRoleBinding(obj.(*rbac.ClusterRoleBinding))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return rbacvalidation.ValidateClusterRoleBindingUpdate(obj.(*rbac.ClusterRoleBinding), old.(*rbac.ClusterRoleBinding))
		},
	},
	"Lease": {
		gvk: gvk(coordination.GroupName, "v1", "Lease"),
		create: func(obj runtime.Object) field.ErrorList {
			return coordinationvalidation.ValidateLease(obj.(*coordination.Lease))
		},
		update: func(obj, old runtime.Object) field.ErrorList {
			return coordinationvalidation.ValidateLeaseUpdate(obj.(*coordination.Lease), old.(*coordination.Lease))
		},
	},
}

// gates are declarative options that are feature gates, as the strategies
// map them.
func gates(names ...featureName) func(obj, old runtime.Object) map[string]bool {
	return func(obj, old runtime.Object) map[string]bool {
		m := make(map[string]bool, len(names))
		for _, n := range names {
			m[string(n)] = utilfeature.DefaultFeatureGate.Enabled(n)
		}
		return m
	}
}
