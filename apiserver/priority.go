package apiserver

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// PriorityClasses and Kubernetes' Priority admission plugin: the
// apiserver makes Kubernetes' two system classes at start, and a new pod
// gets the value and preemption policy of the class it names (or of the
// global default class) in its spec, which the scheduler preempts by.
// Unlike Kubernetes, the system classes are kube-system's alone: a
// tenant's pod at two billion would preempt every other tenant's.

// ensurePriorityClasses creates the system classes missing (Kubernetes'
// validation keeps any of their name to their value).
func (s *Server) ensurePriorityClasses(ctx context.Context) error {
	classes := s.registries[api.PriorityClassesResource.Name]
	for _, pc := range api.SystemPriorityClasses() {
		if _, err := classes.Create(ctx, "", pc); err != nil && !errdefs.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// isSystemPriorityClass says whether name is one of the built-in classes.
func isSystemPriorityClass(name string) bool {
	return name == api.SystemNodeCritical || name == api.SystemClusterCritical
}

// admitPriority is Kubernetes' Priority plugin on a pod's create.
func (s *Server) admitPriority(ctx context.Context, obj api.Object) error {
	pod, ok := obj.(*api.Pod)
	if !ok {
		return nil
	}
	forbidden := func(format string, args ...any) error {
		return fmt.Errorf("pods %q is forbidden: %s: %w", pod.Name, fmt.Sprintf(format, args...), errdefs.ErrForbidden)
	}
	classes := s.registries[api.PriorityClassesResource.Name]
	var pc *api.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		o, err := classes.Get(ctx, "", name)
		if errdefs.IsNotFound(err) {
			return forbidden("no PriorityClass with name %s was found", name)
		}
		if err != nil {
			return fmt.Errorf("failed to resolve PriorityClass with name %s: %w", name, err)
		}
		pc = o.(*api.PriorityClass)
		if isSystemPriorityClass(name) && pod.Namespace != api.NamespaceSystem {
			return forbidden("the PriorityClass %s may be used only by pods in the %s namespace", name, api.NamespaceSystem)
		}
	} else {
		var err error
		if pc, err = defaultPriorityClass(ctx, classes); err != nil {
			return fmt.Errorf("error occurred while retrieving default priority class: %w", err)
		}
	}
	var priority int32
	policy := corev1.PreemptLowerPriority
	if pc != nil {
		pod.Spec.PriorityClassName = pc.Name
		priority = pc.Value
		if pc.PreemptionPolicy != nil {
			policy = *pc.PreemptionPolicy
		}
	}
	if p := pod.Spec.Priority; p != nil && *p != priority {
		return forbidden("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *p, priority)
	}
	pod.Spec.Priority = &priority
	if p := pod.Spec.PreemptionPolicy; p != nil && *p != policy {
		return forbidden("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *p, policy)
	}
	pod.Spec.PreemptionPolicy = &policy
	return nil
}

// defaultPriorityClass is the global default class, nil if none: of
// several (two creates racing), the one of the lowest value, as
// Kubernetes' plugin picks.
func defaultPriorityClass(ctx context.Context, classes *registry.Store) (*api.PriorityClass, error) {
	list, _, err := classes.List(ctx, "", registry.Filter{})
	if err != nil {
		return nil, err
	}
	var best *api.PriorityClass
	for _, o := range list {
		pc := o.(*api.PriorityClass)
		if pc.GlobalDefault && (best == nil || pc.Value < best.Value ||
			(pc.Value == best.Value && strings.Compare(pc.Name, best.Name) < 0)) {
			best = pc
		}
	}
	return best, nil
}

// admitPriorityClass refuses a second global default class, as
// Kubernetes' plugin does on create.
func (s *Server) admitPriorityClass(ctx context.Context, obj api.Object) error {
	pc, ok := obj.(*api.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	def, err := defaultPriorityClass(ctx, s.registries[api.PriorityClassesResource.Name])
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %w", err)
	}
	if def != nil {
		return fmt.Errorf("priorityclasses.scheduling.k8s.io %q is forbidden: PriorityClass %s is already marked as default. Only one default can exist: %w",
			pc.Name, def.Name, errdefs.ErrForbidden)
	}
	return nil
}

// chainMutations runs each of fns in turn, stopping at an error.
func chainMutations(fns ...func(context.Context, api.Object) error) func(context.Context, api.Object) error {
	return func(ctx context.Context, obj api.Object) error {
		for _, fn := range fns {
			if err := fn(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	}
}
