package pod

import (
	"context"
	"fmt"

	"minik8s/pkg/api"
	"minik8s/pkg/events"
)

// Init containers run one after another, each to a successful end, before
// the pod's containers start, as in Kubernetes. The worker keeps them with
// the others (names are unique across both lists) and indexes one list:
// the init containers, in order, then the containers.

// podContainers is the list the worker indexes.
func podContainers(p *api.Pod) []api.Container {
	if len(p.Spec.InitContainers) == 0 {
		return p.Spec.Containers
	}
	return append(append(make([]api.Container, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers)),
		p.Spec.InitContainers...), p.Spec.Containers...)
}

// isInit says whether index i of podContainers is an init container.
func isInit(p *api.Pod, i int) bool { return i < len(p.Spec.InitContainers) }

// containerField is the spec's field of index i of podContainers.
func containerField(p *api.Pod, i int) string {
	if isInit(p, i) {
		return fmt.Sprintf("spec.initContainers[%d]", i)
	}
	return fmt.Sprintf("spec.containers[%d]", i-len(p.Spec.InitContainers))
}

// restartPolicy is how container name restarts: the pod's policy, but an
// init container that succeeded is done even in an Always pod.
func restartPolicy(p *api.Pod, name string) string {
	if p.Spec.RestartPolicy != api.RestartPolicyNever {
		for _, c := range p.Spec.InitContainers {
			if c.Name == name {
				return api.RestartPolicyOnFailure
			}
		}
	}
	return p.Spec.RestartPolicy
}

// succeeded: the container ended for good with exit code 0.
func (c *container) succeeded() bool {
	return c.done && c.state.Terminated != nil && c.state.Terminated.ExitCode == 0
}

// syncInit brings the first init container that has not succeeded one
// step on; true once all have succeeded. One that failed for good fails
// the pod, whose containers then never start.
func (w *Worker) syncInit(ctx context.Context, p *api.Pod) bool {
	for i, spec := range p.Spec.InitContainers {
		c := w.containers[spec.Name]
		if !c.succeeded() && !c.done {
			w.syncContainer(ctx, p, i)
		}
		if c.succeeded() {
			continue
		}
		if c.done {
			code := int32(-1)
			if t := c.state.Terminated; t != nil {
				code = t.ExitCode
			}
			msg := fmt.Sprintf("init container %s failed with exit code %d and the restart policy is %s", c.name, code, p.Spec.RestartPolicy)
			w.failure = &podFailure{message: msg}
			for _, app := range p.Spec.Containers {
				w.containers[app.Name].done = true
			}
			events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "Failed", "Init container %s failed: the pod's containers will not start", c.name)
		}
		return false
	}
	return true
}

// initialized says whether every init container has succeeded.
func (w *Worker) initialized(p *api.Pod) bool {
	for _, spec := range p.Spec.InitContainers {
		if !w.containers[spec.Name].succeeded() {
			return false
		}
	}
	return true
}
