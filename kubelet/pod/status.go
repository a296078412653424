package pod

import (
	"time"

	"minik8s/pkg/api"
)

// status is the pod's status as the worker sees it now.
func (w *Worker) status(p *api.Pod) api.PodStatus {
	start := w.startTime
	// The QoS class is the apiserver's, set at create and immutable.
	st := api.PodStatus{HostIP: w.cfg.NodeIP, PodIP: w.podAddress(), StartTime: &start, QOSClass: p.Status.QOSClass}
	st.PodIPs = []api.PodIP{{IP: st.PodIP}}
	for _, spec := range p.Spec.InitContainers {
		c := w.containers[spec.Name]
		cs := w.containerStatus(spec, c)
		// Kubernetes' rule: an init container is ready once it succeeded.
		cs.Ready = c.succeeded()
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	allReady := len(p.Spec.Containers) > 0
	anyStarted, allDone, anyFailed := false, true, false
	for _, spec := range p.Spec.Containers {
		c := w.containers[spec.Name]
		cs := w.containerStatus(spec, c)
		cs.Ready = c.state.Running != nil && c.prober != nil && c.prober.Ready()
		if !cs.Ready {
			allReady = false
		}
		if c.everStarted {
			anyStarted = true
		}
		if !c.done {
			allDone = false
		} else if t := c.state.Terminated; t == nil || t.ExitCode != 0 {
			anyFailed = true
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	switch {
	case w.failure != nil:
		st.Phase = api.PodFailed
		st.Reason = w.failure.reason
		st.Message = w.failure.message
	case allDone && anyFailed:
		st.Phase = api.PodFailed
	case allDone:
		st.Phase = api.PodSucceeded
	case anyStarted:
		st.Phase = api.PodRunning
	default:
		st.Phase = api.PodPending
	}
	ready := api.ConditionFalse
	if allReady && st.Phase == api.PodRunning {
		ready = api.ConditionTrue
	}
	initialized := api.ConditionFalse
	if w.initialized(p) {
		initialized = api.ConditionTrue
	}
	st.Conditions = []api.PodCondition{
		w.condition(api.PodScheduled, api.ConditionTrue),
		w.condition(api.PodInitialized, initialized),
		w.condition(api.ContainersReady, ready),
		w.condition(api.PodReady, ready),
	}
	return st
}

// containerStatus is the status of container c, of spec, but whether it
// is ready.
func (w *Worker) containerStatus(spec api.Container, c *container) api.ContainerStatus {
	cs := api.ContainerStatus{
		Name:         spec.Name,
		Image:        spec.Image,
		State:        c.state,
		LastState:    c.lastState,
		RestartCount: c.restartCount,
		Ports:        w.assigned[spec.Name],
	}
	if c.id != "" {
		cs.ContainerID = containerID(c.id)
	}
	return cs
}

// condition keeps a condition's transition time while its status stays.
func (w *Worker) condition(typ, status string) api.PodCondition {
	if c, ok := w.conditions[typ]; ok && c.Status == status {
		return c
	}
	t := time.Now().UTC().Truncate(time.Second)
	c := api.PodCondition{Type: typ, Status: status, LastTransitionTime: &t}
	w.conditions[typ] = c
	return c
}
