// Package validation decides what minik8s refuses in an object beyond
// Kubernetes' own rules, which package upstream runs over the kinds
// Kubernetes defines: the function kinds whole (Func, FuncInstance,
// Trigger, App), and, in Kubernetes' kinds, what minik8s serves less of
// than Kubernetes (TCP only, IPv4 only, images containerd can pull, the
// metrics the autoscaler reads). It also fills the defaults Kubernetes
// users expect. Errors come as Kubernetes' validation gives them: a
// field.ErrorList naming every field and why.
package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// MaxFuncNameLength bounds Func names so derived object names stay valid.
const MaxFuncNameLength = 52

// NameFunc is the rule for the names of res's objects, in the form of
// apimachinery's ValidateNameFunc: the messages of what is wrong.
func NameFunc(res api.Resource) func(name string, prefix bool) []string {
	switch {
	case res.Kind == api.FuncsResource.Kind:
		return func(name string, _ bool) []string { return funcNameMsgs(name) }
	case res.Group == api.RBACGroup:
		// Any path segment, as Kubernetes names them ("system:node").
		return func(name string, prefix bool) []string {
			if prefix {
				return content.IsPathSegmentPrefix(name)
			}
			return content.IsPathSegmentName(name)
		}
	case res.Kind == api.NamespacesResource.Kind:
		return func(name string, _ bool) []string { return utilvalidation.IsDNS1123Label(name) }
	}
	return func(name string, _ bool) []string { return utilvalidation.IsDNS1123Subdomain(name) }
}

// Name checks an object name for a resource (the name a node asks to join
// as, before there is an object).
func Name(res api.Resource, name string) error {
	if name == "" {
		return errdefs.Invalid("metadata.name", "name is required")
	}
	if msgs := NameFunc(res)(name, false); len(msgs) > 0 {
		return errdefs.Invalid("metadata.name", "%q: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

func funcNameMsgs(name string) []string {
	switch {
	case name == api.FuncReturn || name == api.FuncTemplate:
		return []string{fmt.Sprintf("%q is reserved", name)}
	case len(name) > MaxFuncNameLength:
		return []string{utilvalidation.MaxLenError(MaxFuncNameLength)}
	case !funcName.MatchString(name):
		return []string{"must consist of letters, digits, '-', '_' and '.', and start and end with a letter or digit (the reference design names functions as append_world)"}
	}
	return nil
}

// funcNameErrs checks the name of a function, as a template or as a chain
// target.
func funcNameErrs(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "the function's name")}
	}
	var errs field.ErrorList
	for _, msg := range funcNameMsgs(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// FuncName checks the name of a function (a chain target, a trigger's).
func FuncName(fieldPath, name string) error {
	if errs := funcNameErrs(field.NewPath(fieldPath), name); len(errs) > 0 {
		return errdefs.Invalid(fieldPath, "%s", errs[0].ErrorBody())
	}
	return nil
}

// Object returns what minik8s refuses in obj, a defaulted object of res,
// beyond what Kubernetes' rules refuse (for the function kinds: in the
// spec; their metadata is judged by Kubernetes' generic rules).
func Object(res api.Resource, obj api.Object) field.ErrorList {
	switch o := obj.(type) {
	case *api.Pod:
		return podSpec(field.NewPath("spec"), &o.Spec)
	case *api.ReplicaSet:
		return templateSpec(field.NewPath("spec", "template", "spec"), &o.Spec.Template.Spec)
	case *api.Deployment:
		return append(deployment(o), templateSpec(field.NewPath("spec", "template", "spec"), &o.Spec.Template.Spec)...)
	case *api.DaemonSet:
		return templateSpec(field.NewPath("spec", "template", "spec"), &o.Spec.Template.Spec)
	case *api.StatefulSet:
		return templateSpec(field.NewPath("spec", "template", "spec"), &o.Spec.Template.Spec)
	case *api.Job:
		return append(jobNotDone(field.NewPath("spec"), &o.Spec), templateSpec(field.NewPath("spec", "template", "spec"), &o.Spec.Template.Spec)...)
	case *api.CronJob:
		return append(jobNotDone(field.NewPath("spec", "jobTemplate", "spec"), &o.Spec.JobTemplate.Spec),
			templateSpec(field.NewPath("spec", "jobTemplate", "spec", "template", "spec"), &o.Spec.JobTemplate.Spec.Template.Spec)...)
	case *api.HorizontalPodAutoscaler:
		return hpa(o)
	case *api.ResourceQuota:
		return resourceQuota(o)
	case *api.LimitRange:
		return limitRange(o)
	case *api.Service:
		return service(o)
	case *api.Node:
		return nodeStatus(&o.Status)
	case *api.ClusterRole:
		if o.AggregationRule != nil {
			return field.ErrorList{field.Forbidden(field.NewPath("aggregationRule"),
				"minik8s does not do this, and the role would grant other than asked: no controller gathers other roles' rules into it")}
		}
	case *api.Func:
		return Func(o)
	case *api.FuncInstance:
		return funcNameErrs(field.NewPath("spec", "function"), o.Spec.Function)
	case *api.FuncRevision:
		errs := funcNameErrs(field.NewPath("spec", "function"), o.Spec.Function)
		if o.Spec.Revision < 1 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "revision"), o.Spec.Revision, "must be at least 1"))
		}
		return errs
	case *api.Trigger:
		return trigger(o)
	case *api.App:
		return configKeys(field.NewPath("spec", "config"), o.Spec.Config)
	}
	return nil
}

// deployment: the pod-template-hash label is the controller's to set on
// the ReplicaSets it makes.
func deployment(d *api.Deployment) field.ErrorList {
	if v, ok := d.Spec.Template.Labels[api.LabelPodTemplateHash]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "template", "metadata", "labels").Key(api.LabelPodTemplateHash),
			fmt.Sprintf("%q is set by the deployment controller", v))}
	}
	return nil
}

// service: the proxies forward TCP, and the cluster's addresses are IPv4.
func service(s *api.Service) field.ErrorList {
	var errs field.ErrorList
	if ip := s.Spec.ClusterIP; ip != "" && ip != "None" {
		if parsed := parseIP(ip); parsed != nil && parsed.To4() == nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIP"), ip, "must be an IPv4 address: the cluster's addresses are IPv4"))
		}
	}
	for i, p := range s.Spec.Ports {
		if p.Protocol != "" && p.Protocol != "TCP" {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ports").Index(i).Child("protocol"), p.Protocol, []string{"TCP"}))
		}
	}
	return append(errs, serviceNotDone(field.NewPath("spec"), &s.Spec)...)
}
