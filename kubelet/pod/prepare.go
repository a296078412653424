package pod

import (
	"context"
	"sort"
	"strconv"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet/volume"
	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
)

// Before a pod's containers run: what a previous kubelet left is taken
// over, and the pod's dir, volumes and token are prepared.

// init takes over what a previous kubelet left: containers in containerd
// and the pod's last status.
func (w *Worker) init(ctx context.Context, p *api.Pod) {
	w.startTime = time.Now().UTC().Truncate(time.Second)
	if p.Status.StartTime != nil {
		w.startTime = *p.Status.StartTime
	}
	for _, cs := range p.Status.Conditions {
		w.conditions[cs.Type] = cs
	}
	prev := map[string]api.ContainerStatus{}
	for _, cs := range append(append([]api.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		prev[cs.Name] = cs
	}
	// What has not begun waits for the init containers, if any.
	notBegun := "ContainerCreating"
	if len(p.Spec.InitContainers) > 0 {
		notBegun = "PodInitializing"
	}
	for _, c := range podContainers(p) {
		st := prev[c.Name]
		w.containers[c.Name] = &container{
			name:         c.Name,
			restartCount: st.RestartCount,
			everStarted:  st.ContainerID != "",
			state:        st.State,
			lastState:    st.LastState,
			done:         terminalPhase(p.Status.Phase) || (st.State.Terminated != nil && !shouldRestart(restartPolicy(p, c.Name), st.State.Terminated.ExitCode)),
		}
		if st.State.Running == nil && st.State.Terminated == nil && st.State.Waiting == nil {
			w.containers[c.Name].state = waiting(notBegun, "")
		}
	}
	if terminalPhase(p.Status.Phase) {
		w.failure = nil
	}
	// Keep the newest attempt of each container, remove the rest.
	sort.Slice(w.adopted, func(i, j int) bool {
		return restartLabel(w.adopted[i]) > restartLabel(w.adopted[j])
	})
	for _, a := range w.adopted {
		name := a.Labels[containerd.LabelContainerName]
		c := w.containers[name]
		if c == nil || c.id != "" {
			w.remove(ctx, a.ID)
			continue
		}
		c.id = a.ID
		c.restartCount = restartLabel(a)
		c.everStarted = true
		c.startedAt = a.CreatedAt
		if st, ok := prev[name]; ok && st.State.Running != nil && st.State.Running.StartedAt != nil && st.ContainerID == containerID(a.ID) {
			c.startedAt = *st.State.Running.StartedAt
		}
		w.log.WithFields(log.Fields{"container": name, "id": a.ID}).Info("adopted container")
	}
	w.adopted = nil
}

func restartLabel(c containerd.Container) int32 {
	n, _ := strconv.Atoi(c.Labels[containerd.LabelRestartCount])
	return int32(n)
}

func containerID(id string) string { return "containerd://" + id }

// prepare checks what the kubelet itself must understand of the spec,
// assigns ports and makes the volumes.
func (w *Worker) prepare(ctx context.Context, p *api.Pod) {
	for i, c := range podContainers(p) {
		if _, _, err := limits(c, containerField(p, i)); err != nil {
			w.failure = &podFailure{reason: "InvalidResourceLimit", message: err.Error()}
			for _, ct := range w.containers {
				ct.state = waiting("CreateContainerConfigError", err.Error())
				ct.done = true
			}
			return
		}
	}
	if w.ownNetwork(p) && w.netnsPath == "" {
		// Set up again after a kubelet restart: the same namespace and IP.
		path, ip, err := w.cfg.Network.SetUp(ctx, w.networkPod(p))
		if err != nil {
			w.setAllWaiting("ContainerCreating", "setting up the pod's network: "+err.Error())
			w.log.WithError(err).Warn("setting up the pod's network; retrying")
			return
		}
		w.netnsPath, w.podIP = path, ip
	}
	if err := w.writeNameFiles(p); err != nil {
		w.setAllWaiting("ContainerCreating", err.Error())
		return
	}
	if w.assigned == nil {
		a, err := assignPorts(p, w.dir, w.ports, w.ownNetwork(p))
		if err != nil {
			w.setAllWaiting("CreateContainerConfigError", "allocating ports: "+err.Error())
			return
		}
		w.assigned = a
	}
	vols, err := volume.Prepare(ctx, p, w.dir, w.api, w.cfg.Allocatable)
	if err != nil {
		if errdefs.IsInvalid(err) {
			w.failure = &podFailure{reason: "InvalidVolume", message: err.Error()}
		}
		w.setAllWaiting("CreateContainerConfigError", err.Error())
		return
	}
	w.volumes = vols
	if err := w.prepareToken(ctx, p); err != nil {
		w.setAllWaiting("CreateContainerConfigError", err.Error())
		return
	}
	w.prepared = true
}

func (w *Worker) setAllWaiting(reason, msg string) {
	for _, c := range w.containers {
		if c.id == "" && !c.done {
			c.state = waiting(reason, msg)
		}
	}
}

func waiting(reason, msg string) api.ContainerState {
	return api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: reason, Message: msg}}
}
