package validation

import (
	"fmt"
	"math"
	"net"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Status checks what an object's status says, as written through the
// status subresource by the component that owns it: a status is stored and
// read by others, so it is held to the same rules as a spec.
func Status(obj api.Object) error {
	switch o := obj.(type) {
	case *api.Node:
		return nodeStatus(&o.Status)
	case *api.Pod:
		return podStatus(&o.Status)
	case *api.ReplicaSet:
		return replicaSetStatus(&o.Status)
	case *api.Func:
		return funcStatus(o)
	case *api.FuncInstance:
		return funcInstanceStatus(&o.Status)
	}
	return nil
}

func oneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return errdefs.Invalid(field, "%q is not one of %q", v, allowed)
}

func optionalIP(field, ip string) error {
	if ip != "" && net.ParseIP(ip) == nil {
		return errdefs.Invalid(field, "%q is not an IP address", ip)
	}
	return nil
}

func nodeStatus(s *api.NodeStatus) error {
	if err := resourceList("status.capacity", s.Capacity); err != nil {
		return err
	}
	if err := resourceList("status.allocatable", s.Allocatable); err != nil {
		return err
	}
	for i, c := range s.Conditions {
		if err := oneOf(fmt.Sprintf("status.conditions[%d].status", i), c.Status, "True", "False", "Unknown"); err != nil {
			return err
		}
	}
	for i, a := range s.Addresses {
		if a.Type == "InternalIP" || a.Type == "ExternalIP" {
			if err := optionalIP(fmt.Sprintf("status.addresses[%d].address", i), a.Address); err != nil {
				return err
			}
		}
	}
	return nil
}

func podStatus(s *api.PodStatus) error {
	if s.Phase != "" {
		if err := oneOf("status.phase", s.Phase, api.PodPending, api.PodRunning, api.PodSucceeded, api.PodFailed, api.PodUnknown); err != nil {
			return err
		}
	}
	if err := optionalIP("status.hostIP", s.HostIP); err != nil {
		return err
	}
	if err := optionalIP("status.podIP", s.PodIP); err != nil {
		return err
	}
	for i, c := range s.Conditions {
		if err := oneOf(fmt.Sprintf("status.conditions[%d].status", i), c.Status, "True", "False", "Unknown"); err != nil {
			return err
		}
	}
	for i, c := range s.ContainerStatuses {
		if c.RestartCount < 0 {
			return errdefs.Invalid(fmt.Sprintf("status.containerStatuses[%d].restartCount", i), "%d must not be negative", c.RestartCount)
		}
	}
	return nil
}

func replicaSetStatus(s *api.ReplicaSetStatus) error {
	for _, n := range []struct {
		field string
		v     int32
	}{{"status.replicas", s.Replicas}, {"status.readyReplicas", s.ReadyReplicas},
		{"status.availableReplicas", s.AvailableReplicas}, {"status.fullyLabeledReplicas", s.FullyLabeledReplicas}} {
		if n.v < 0 {
			return errdefs.Invalid(n.field, "%d must not be negative", n.v)
		}
	}
	if s.ReadyReplicas > s.Replicas {
		return errdefs.Invalid("status.readyReplicas", "%d is more than status.replicas %d", s.ReadyReplicas, s.Replicas)
	}
	if s.ObservedGeneration < 0 {
		return errdefs.Invalid("status.observedGeneration", "%d must not be negative", s.ObservedGeneration)
	}
	return nil
}

func funcStatus(f *api.Func) error {
	_, _, hi := FuncBounds(&f.Spec)
	if c := f.Status.Counter; c < 0 || c > hi || c > math.MaxInt32 {
		return errdefs.Invalid("status.counter", "%d is not between 0 and maxInstanceNum %d", c, hi)
	}
	return nil
}

func funcInstanceStatus(s *api.FuncInstanceStatus) error {
	if s.Phase != "" {
		if err := oneOf("status.phase", s.Phase, api.InstancePending, api.InstanceRunning, api.InstanceSucceeded, api.InstanceFailed); err != nil {
			return err
		}
	}
	if s.Hops < 0 {
		return errdefs.Invalid("status.hops", "%d must not be negative", s.Hops)
	}
	return nil
}
