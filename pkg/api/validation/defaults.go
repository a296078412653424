package validation

import (
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/function/call"
	"minik8s/pkg/rollout"
)

// Default fills the fields Kubernetes fills on create and update. Func specs
// are left as written (their defaults apply where they are used).
func Default(res api.Resource, obj api.Object) {
	tm := obj.GetTypeMeta()
	tm.Kind = res.Kind
	obj.GetObjectMeta().SelfLink = "" // as Kubernetes, which no longer sets it
	switch {
	case res.Kind != "Func":
		tm.APIVersion = res.GroupVersion()
	case tm.APIVersion == "":
		tm.APIVersion = api.FuncAPIVersionV2
	}
	switch o := obj.(type) {
	case *api.CustomResourceDefinition:
		// Kubernetes' defaults (conversion None, served columns...).
		crd := apiextv1.CustomResourceDefinition{Spec: o.Spec, Status: o.Status}
		apiextv1.SetObjectDefaults_CustomResourceDefinition(&crd)
		o.Spec, o.Status = crd.Spec, crd.Status
	case *api.Pod:
		DefaultPodSpec(&o.Spec)
		if o.Status.Phase == "" {
			o.Status.Phase = api.PodPending
		}
	case *api.ReplicaSet:
		if o.Spec.Replicas == nil {
			one := int32(1)
			o.Spec.Replicas = &one
		}
		DefaultPodSpec(&o.Spec.Template.Spec)
	case *api.Deployment:
		defaultDeployment(o)
	case *api.DaemonSet:
		defaultDaemonSet(o)
	case *api.StatefulSet:
		defaultStatefulSet(o)
	case *api.LimitRange:
		defaultLimitRange(o)
	case *api.HorizontalPodAutoscaler:
		defaultHPA(o)
	case *api.Job:
		defaultJobSpec(&o.Spec)
		defaultJobSelector(o)
	case *api.CronJob:
		defaultCronJob(o)
	case *api.Service:
		defaultService(&o.Spec)
	case *api.FuncInstance:
		call.Default(o)
	case *api.NetworkPolicy:
		defaultNetworkPolicy(&o.Spec)
	case *api.PriorityClass:
		if o.PreemptionPolicy == nil {
			p := corev1.PreemptLowerPriority
			o.PreemptionPolicy = &p
		}
	case *api.PersistentVolume:
		defaultString(&o.Spec.PersistentVolumeReclaimPolicy, api.ReclaimRetain)
		defaultStringPtr(&o.Spec.VolumeMode, string(corev1.PersistentVolumeFilesystem))
	case *api.PersistentVolumeClaim:
		defaultStringPtr(&o.Spec.VolumeMode, string(corev1.PersistentVolumeFilesystem))
	case *api.StorageClass:
		defaultStringPtr(&o.ReclaimPolicy, api.ReclaimDelete)
		defaultStringPtr(&o.VolumeBindingMode, api.VolumeBindingImmediate)
	case *api.Namespace:
		if o.Status.Phase == "" {
			o.Status.Phase = api.NamespaceActive
		}
	case *api.Trigger:
		if h := o.Spec.HTTP; h != nil {
			for i, m := range h.Methods {
				h.Methods[i] = strings.ToUpper(m)
			}
		}
		if q := o.Spec.Queue; q != nil {
			if q.MaxDeliver == 0 {
				q.MaxDeliver = api.DefaultMaxDeliver
			}
			if q.DeadLetterSubject == "" {
				q.DeadLetterSubject = "deadletter." + q.Subject
				if strings.ContainsAny(q.Subject, "*>") {
					// Each failed message to deadletter.ITS_SUBJECT.
					q.DeadLetterSubject = "deadletter.>"
				}
			}
		}
	case *api.Secret:
		if o.Type == "" {
			o.Type = api.SecretTypeOpaque
		}
		// stringData is a write-only convenience, as in Kubernetes.
		for k, v := range o.StringData {
			if o.Data == nil {
				o.Data = map[string][]byte{}
			}
			o.Data[k] = []byte(v)
		}
		o.StringData = nil
	}
}

// defaultService fills what Kubernetes' defaults and its Service REST
// strategy fill: the type, ports' protocols and target ports, clusterIPs
// from clusterIP (and back), one IPv4 family, the Cluster traffic
// policies and no session affinity.
func defaultService(s *api.ServiceSpec) {
	if s.Type == "" {
		s.Type = "ClusterIP"
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = "TCP"
		}
		if p.TargetPort == "" {
			p.TargetPort = api.IntOrString(strconv.Itoa(int(p.Port)))
		}
	}
	if s.Type == string(corev1.ServiceTypeExternalName) {
		return
	}
	if s.ClusterIP == "" && len(s.ClusterIPs) > 0 {
		s.ClusterIP = s.ClusterIPs[0]
	}
	if s.ClusterIP != "" && len(s.ClusterIPs) == 0 {
		s.ClusterIPs = []string{s.ClusterIP}
	}
	if len(s.IPFamilies) == 0 {
		s.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if s.IPFamilyPolicy == nil {
		single := corev1.IPFamilyPolicySingleStack
		s.IPFamilyPolicy = &single
	}
	if s.InternalTrafficPolicy == nil {
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		s.InternalTrafficPolicy = &cluster
	}
	if s.ExternalTrafficPolicy == "" && (s.Type == string(corev1.ServiceTypeNodePort) || s.Type == string(corev1.ServiceTypeLoadBalancer)) {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
}

// DefaultTerminationGracePeriod is Kubernetes' default, in seconds.
const DefaultTerminationGracePeriod = 30

// DefaultSchedulerName is the scheduler a pod that names none has, as
// Kubernetes names it.
const DefaultSchedulerName = "default-scheduler"

// DefaultPodSpec fills restart policy, grace period, DNS policy, scheduler,
// pull policies and port protocols, as Kubernetes defaults them.
func DefaultPodSpec(s *api.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = api.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = api.DNSClusterFirst
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(DefaultTerminationGracePeriod)
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SchedulerName == "" {
		s.SchedulerName = DefaultSchedulerName
	}
	// serviceAccount is serviceAccountName's old name: either given, both
	// say it, as Kubernetes' conversion writes them.
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.ServiceAccount
	}
	s.ServiceAccount = s.ServiceAccountName
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
}

func defaultContainer(c *api.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = "IfNotPresent"
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = string(corev1.TerminationMessagePathDefault)
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = string(corev1.TerminationMessageReadFile)
	}
	for j := range c.Ports {
		if c.Ports[j].Protocol == "" {
			c.Ports[j].Protocol = "TCP"
		}
	}
}

func defaultDeployment(d *api.Deployment) {
	if d.Spec.Replicas == nil {
		one := int32(1)
		d.Spec.Replicas = &one
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = api.DeploymentRollingUpdate
	}
	if st.Type == api.DeploymentRollingUpdate {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &api.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxSurge == nil {
			v := api.IntOrString(rollout.DefaultMaxSurge)
			st.RollingUpdate.MaxSurge = &v
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			v := api.IntOrString(rollout.DefaultMaxUnavailable)
			st.RollingUpdate.MaxUnavailable = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		n := int32(rollout.DefaultRevisionHistoryLimit)
		d.Spec.RevisionHistoryLimit = &n
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		n := int32(rollout.DefaultProgressDeadlineSeconds)
		d.Spec.ProgressDeadlineSeconds = &n
	}
	DefaultPodSpec(&d.Spec.Template.Spec)
}

// defaultDaemonSet fills what Kubernetes' SetDefaults_DaemonSet does: a
// rolling update of one node at a time, no surge, ten old revisions.
func defaultDaemonSet(d *api.DaemonSet) {
	st := &d.Spec.UpdateStrategy
	if st.Type == "" {
		st.Type = api.DaemonSetRollingUpdate
	}
	if st.Type == api.DaemonSetRollingUpdate {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &api.RollingUpdateDaemonSet{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			v := api.IntOrString("1")
			st.RollingUpdate.MaxUnavailable = &v
		}
		if st.RollingUpdate.MaxSurge == nil {
			v := api.IntOrString("0")
			st.RollingUpdate.MaxSurge = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		n := int32(rollout.DefaultRevisionHistoryLimit)
		d.Spec.RevisionHistoryLimit = &n
	}
	DefaultPodSpec(&d.Spec.Template.Spec)
}

// defaultStatefulSet fills what Kubernetes' SetDefaults_StatefulSet does:
// one replica, pods one at a time in order, a rolling update of every
// ordinal one pod at a time, claims retained, ten old revisions.
func defaultStatefulSet(s *api.StatefulSet) {
	if s.Spec.Replicas == nil {
		one := int32(1)
		s.Spec.Replicas = &one
	}
	if s.Spec.PodManagementPolicy == "" {
		s.Spec.PodManagementPolicy = api.OrderedReadyPodManagement
	}
	st := &s.Spec.UpdateStrategy
	if st.Type == "" {
		st.Type = api.StatefulSetRollingUpdate
	}
	if st.Type == api.StatefulSetRollingUpdate {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &api.RollingUpdateStatefulSetStrategy{}
		}
		if st.RollingUpdate.Partition == nil {
			zero := int32(0)
			st.RollingUpdate.Partition = &zero
		}
	}
	p := s.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil {
		p = &api.StatefulSetPersistentVolumeClaimRetentionPolicy{}
		s.Spec.PersistentVolumeClaimRetentionPolicy = p
	}
	if p.WhenDeleted == "" {
		p.WhenDeleted = api.RetainPersistentVolumeClaimRetentionPolicy
	}
	if p.WhenScaled == "" {
		p.WhenScaled = api.RetainPersistentVolumeClaimRetentionPolicy
	}
	if s.Spec.RevisionHistoryLimit == nil {
		n := int32(rollout.DefaultRevisionHistoryLimit)
		s.Spec.RevisionHistoryLimit = &n
	}
	for i := range s.Spec.VolumeClaimTemplates {
		if c := &s.Spec.VolumeClaimTemplates[i].Spec; c.VolumeMode == nil {
			fs := "Filesystem"
			c.VolumeMode = &fs
		}
	}
	DefaultPodSpec(&s.Spec.Template.Spec)
}

// defaultJobSpec fills a Job's counts as Kubernetes does: both unset, one
// pod to succeed, one at a time.
func defaultJobSpec(s *api.JobSpec) {
	one := int32(1)
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = &one
	}
	if s.Parallelism == nil {
		s.Parallelism = &one
	}
	if s.BackoffLimit == nil {
		six := int32(6)
		s.BackoffLimit = &six
	}
	if s.Suspend == nil {
		no := false
		s.Suspend = &no
	}
	if s.CompletionMode == nil {
		mode := batchv1.NonIndexedCompletion
		s.CompletionMode = &mode
	}
	if s.PodReplacementPolicy == nil && s.PodFailurePolicy == nil {
		policy := batchv1.TerminatingOrFailed
		s.PodReplacementPolicy = &policy
	}
	DefaultPodSpec(&s.Template.Spec)
}

// defaultJobSelector selects a Job's pods by its uid, labelling its
// template so (unless the Job chose its selector by hand).
func defaultJobSelector(j *api.Job) {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector || j.Spec.Selector != nil || j.UID == "" {
		return
	}
	set := map[string]string{api.LabelJobControllerUID: j.UID, api.LabelLegacyUID: j.UID}
	j.Spec.Selector = &api.LabelSelector{MatchLabels: map[string]string{api.LabelJobControllerUID: j.UID}}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range set {
		j.Spec.Template.Labels[k] = v
	}
	j.Spec.Template.Labels[api.LabelJobName] = j.Name
	j.Spec.Template.Labels[api.LabelLegacyJobName] = j.Name
}

func defaultCronJob(c *api.CronJob) {
	if c.Spec.ConcurrencyPolicy == "" {
		c.Spec.ConcurrencyPolicy = api.ConcurrencyAllow
	}
	if c.Spec.Suspend == nil {
		no := false
		c.Spec.Suspend = &no
	}
	if c.Spec.SuccessfulJobsHistoryLimit == nil {
		n := int32(3)
		c.Spec.SuccessfulJobsHistoryLimit = &n
	}
	if c.Spec.FailedJobsHistoryLimit == nil {
		n := int32(1)
		c.Spec.FailedJobsHistoryLimit = &n
	}
	defaultJobSpec(&c.Spec.JobTemplate.Spec)
}

// KeepJobSelector keeps the selector the server gave the Job cur, and the
// labels of its template that go with it, in next, which leaves them out
// (an update written from the manifest).
func KeepJobSelector(cur, next *api.Job) {
	if next.Spec.Selector != nil || cur.Spec.Selector == nil {
		return
	}
	next.Spec.Selector = cur.Spec.Selector
	if next.Spec.Template.Labels == nil {
		next.Spec.Template.Labels = map[string]string{}
	}
	for _, k := range []string{api.LabelJobControllerUID, api.LabelLegacyUID, api.LabelJobName, api.LabelLegacyJobName} {
		if v, ok := cur.Spec.Template.Labels[k]; ok {
			if _, set := next.Spec.Template.Labels[k]; !set {
				next.Spec.Template.Labels[k] = v
			}
		}
	}
}

// defaultNetworkPolicy is Kubernetes' SetDefaults_NetworkPolicy and
// SetDefaults_NetworkPolicyPort: a port is TCP unless it says, and a policy
// without types isolates for ingress, and for egress too when it has egress
// rules.
func defaultNetworkPolicy(s *api.NetworkPolicySpec) {
	ports := func(ps []api.NetworkPolicyPort) {
		for i := range ps {
			if ps[i].Protocol == nil {
				tcp := string(corev1.ProtocolTCP)
				ps[i].Protocol = &tcp
			}
		}
	}
	for i := range s.Ingress {
		ports(s.Ingress[i].Ports)
	}
	for i := range s.Egress {
		ports(s.Egress[i].Ports)
	}
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []string{api.PolicyTypeIngress}
		if len(s.Egress) > 0 {
			s.PolicyTypes = append(s.PolicyTypes, api.PolicyTypeEgress)
		}
	}
}

func defaultString(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

func defaultStringPtr(p **string, v string) {
	if *p == nil {
		*p = &v
	}
}
