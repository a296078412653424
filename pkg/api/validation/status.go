package validation

import (
	"fmt"
	"math"
	"net"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
)

// Status checks what an object's status says, as written through the
// status subresource by the component that owns it: a status is stored and
// read by others, so it is held to the same rules as a spec. These are the
// rules beyond Kubernetes' (package upstream): the values minik8s's
// components switch on.
func Status(obj api.Object) field.ErrorList {
	switch o := obj.(type) {
	case *api.Node:
		return nodeStatus(&o.Status)
	case *api.Pod:
		return podStatus(&o.Status)
	case *api.Func:
		return funcStatus(o)
	case *api.FuncInstance:
		return funcInstanceStatus(o)
	}
	return nil
}

var conditionStatuses = []string{api.ConditionTrue, api.ConditionFalse, api.ConditionUnknown}

func oneOf(path *field.Path, v string, allowed []string) field.ErrorList {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, v, allowed)}
}

// nodeStatus: quantities the scheduler counts, condition statuses and
// addresses it reads.
func nodeStatus(s *api.NodeStatus) field.ErrorList {
	path := field.NewPath("status")
	errs := resourceList(path.Child("capacity"), s.Capacity)
	errs = append(errs, resourceList(path.Child("allocatable"), s.Allocatable)...)
	for i, c := range s.Conditions {
		errs = append(errs, oneOf(path.Child("conditions").Index(i).Child("status"), c.Status, conditionStatuses)...)
	}
	for i, a := range s.Addresses {
		if (a.Type == api.NodeInternalIP || a.Type == "ExternalIP") && a.Address != "" && net.ParseIP(a.Address) == nil {
			errs = append(errs, field.Invalid(path.Child("addresses").Index(i).Child("address"), a.Address, "must be an IP address"))
		}
	}
	return errs
}

// podStatus: the phase and condition statuses the controllers switch on
// (Kubernetes judges the addresses).
func podStatus(s *api.PodStatus) field.ErrorList {
	path := field.NewPath("status")
	var errs field.ErrorList
	if s.Phase != "" {
		errs = oneOf(path.Child("phase"), s.Phase, []string{api.PodPending, api.PodRunning, api.PodSucceeded, api.PodFailed, api.PodUnknown})
	}
	for i, c := range s.Conditions {
		errs = append(errs, oneOf(path.Child("conditions").Index(i).Child("status"), c.Status, conditionStatuses)...)
	}
	for i, c := range s.ContainerStatuses {
		if c.RestartCount < 0 {
			errs = append(errs, field.Invalid(path.Child("containerStatuses").Index(i).Child("restartCount"), c.RestartCount, "must be greater than or equal to 0"))
		}
	}
	return errs
}

func funcStatus(f *api.Func) field.ErrorList {
	_, _, hi := FuncBounds(&f.Spec)
	if c := f.Status.Counter; c < 0 || c > hi || c > math.MaxInt32 {
		return field.ErrorList{field.Invalid(field.NewPath("status", "counter"), c, fmt.Sprintf("must be between 0 and maxInstanceNum %d", hi))}
	}
	return nil
}

func funcInstanceStatus(o *api.FuncInstance) field.ErrorList {
	s := o.Status
	path := field.NewPath("status")
	var errs field.ErrorList
	if s.Phase != "" {
		errs = oneOf(path.Child("phase"), s.Phase, []string{api.InstancePending, api.InstanceRunning, api.InstanceSucceeded, api.InstanceFailed})
	}
	if s.Hops < 0 {
		errs = append(errs, field.Invalid(path.Child("hops"), s.Hops, utilvalidation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}
