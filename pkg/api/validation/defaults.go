package validation

import (
	"strconv"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/rollout"
)

// Default fills the fields Kubernetes fills on create and update. Func specs
// are left as written (their defaults apply where they are used).
func Default(res api.Resource, obj api.Object) {
	tm := obj.GetTypeMeta()
	tm.Kind = res.Kind
	switch {
	case res.Kind != "Func":
		tm.APIVersion = res.GroupVersion()
	case tm.APIVersion == "":
		tm.APIVersion = api.FuncAPIVersionV2
	}
	switch o := obj.(type) {
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
	case *api.Service:
		if o.Spec.Type == "" {
			o.Spec.Type = "ClusterIP"
		}
		for i := range o.Spec.Ports {
			p := &o.Spec.Ports[i]
			if p.Protocol == "" {
				p.Protocol = "TCP"
			}
			if p.TargetPort == "" {
				p.TargetPort = api.IntOrString(strconv.Itoa(int(p.Port)))
			}
		}
	case *api.FuncInstance:
		if o.Status.Phase == "" {
			o.Status.Phase = api.InstancePending
		}
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

// DefaultTerminationGracePeriod is Kubernetes' default, in seconds.
const DefaultTerminationGracePeriod = 30

// DefaultPodSpec fills restart policy, grace period and port protocols.
func DefaultPodSpec(s *api.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = api.RestartPolicyAlways
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(DefaultTerminationGracePeriod)
		s.TerminationGracePeriodSeconds = &g
	}
	for i := range s.Containers {
		c := &s.Containers[i]
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = "IfNotPresent"
		}
		for j := range c.Ports {
			if c.Ports[j].Protocol == "" {
				c.Ports[j].Protocol = "TCP"
			}
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
