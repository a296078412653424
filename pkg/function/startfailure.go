package function

import (
	"fmt"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/podstatus"
)

// StartFailure is why a pod cannot serve its function: its code does not
// start (a syntax error, no run, a failing preRun), its image cannot be
// pulled, its container cannot be made. Reason is Kubernetes' word for it
// (CrashLoopBackOff, ImagePullBackOff, ...), Message the cause, for a
// runtime that stopped the message it left (its termination message).
type StartFailure struct {
	Reason, Message string
}

func (f *StartFailure) Error() string {
	if f.Message == "" {
		return f.Reason
	}
	return f.Reason + ": " + f.Message
}

// waitingFailures are the waiting reasons a container does not leave by
// itself soon: they say its start failed, and why.
var waitingFailures = map[string]bool{
	"CrashLoopBackOff": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerError": true, "CreateContainerConfigError": true, "RunContainerError": true,
}

// PodStartFailure says why a pod that is not ready cannot start serving,
// or nil while it may yet (it is being made, pulled, started or probed).
// A pod that ended is a failure too. A container that stopped with a
// message of its own (funcserver writes its start's failure there) fails
// at once, until it is ready again; one that stopped without one fails
// once its restarts back off.
func PodStartFailure(p *api.Pod) *StartFailure {
	switch p.Status.Phase {
	case api.PodFailed, api.PodSucceeded:
		msg := p.Status.Message
		if msg == "" {
			msg = p.Status.Reason
		}
		return &StartFailure{Reason: "PodEnded", Message: fmt.Sprintf("the pod ended (%s) before serving: %s", p.Status.Phase, msg)}
	}
	if podstatus.IsReady(p) {
		return nil
	}
	statuses := append(append([]api.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if cs.Ready {
			continue
		}
		if t := stoppedWithMessage(cs); t != nil {
			return &StartFailure{Reason: startFailedReason(cs), Message: strings.TrimSpace(t.Message)}
		}
		w := cs.State.Waiting
		if w == nil || !waitingFailures[w.Reason] {
			continue
		}
		msg := w.Message
		if t := cs.LastState.Terminated; w.Reason == "CrashLoopBackOff" && t != nil {
			msg = fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
			if t.Reason != "" && t.Reason != "Error" {
				msg += " (" + t.Reason + ")"
			}
		}
		return &StartFailure{Reason: w.Reason, Message: msg}
	}
	return nil
}

// stoppedWithMessage is the container's last stop when it failed and left
// a message. The kubelet starts a container again at once after its first
// failure, so the pod may say running (not ready) by the time its status
// is written: its last attempt is the news.
func stoppedWithMessage(cs api.ContainerStatus) *api.ContainerStateTerminated {
	t := cs.State.Terminated
	if t == nil {
		t = cs.LastState.Terminated
	}
	if t == nil || t.ExitCode == 0 || strings.TrimSpace(t.Message) == "" {
		return nil
	}
	return t
}

func startFailedReason(cs api.ContainerStatus) string {
	if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
		return w.Reason
	}
	return "StartFailed"
}
