package function

import (
	"fmt"
	"strings"
	"time"

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

// codeNotDelivered says whether w waits for the function's own code
// ConfigMap, which its controller makes when the function is made or
// changed: a pod made at once (a v1 step's) may come first, and the
// kubelet tries again until it is there.
func codeNotDelivered(p *api.Pod, w *api.ContainerStateWaiting) bool {
	fn := p.Labels[LabelFunc]
	if of := p.Labels[LabelRevisionOf]; of != "" {
		fn = of + RevisionSep + p.Labels[LabelRevision] // an older revision's unit
	}
	return fn != "" && w.Reason == "CreateContainerConfigError" &&
		strings.Contains(w.Message, fmt.Sprintf("configMap %q", ObjectName(fn))) && strings.Contains(w.Message, "not found")
}

// PodStartFailure says why a pod that is not ready cannot start serving,
// or nil while it may yet (it is being made, pulled, started or probed).
// A pod that ended is a failure too. A container whose start failed with
// a message of its own (funcserver writes its start's failure there)
// fails at once; one that stopped without one fails once its restarts
// back off. Either only while the pod has not been ready since that
// attempt began: a pod that served and then stopped being ready (a
// liveness restart, a probe failing under load) says nothing of its code.
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
		if t := failedStart(cs); t != nil && !readySince(p, t) {
			return &StartFailure{Reason: startFailedReason(cs), Message: strings.TrimSpace(t.Message)}
		}
		w := cs.State.Waiting
		if w == nil || !waitingFailures[w.Reason] || codeNotDelivered(p, w) {
			continue
		}
		msg := w.Message
		if t := cs.LastState.Terminated; w.Reason == "CrashLoopBackOff" && t != nil {
			if readySince(p, t) {
				continue
			}
			msg = fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
			if t.Reason != "" && t.Reason != "Error" {
				msg += " (" + t.Reason + ")"
			}
		}
		return &StartFailure{Reason: w.Reason, Message: msg}
	}
	return nil
}

// EndedByNode says p ended for its node's sake (the node was lost, the
// pod evicted), not its own: it says nothing of whether its code starts.
func EndedByNode(p *api.Pod) bool {
	switch p.Status.Reason {
	case "NodeLost", "Evicted", "Terminated": // Terminated: a node's graceful shutdown, in Kubernetes' words
		return p.Status.Phase == api.PodFailed
	}
	return false
}

// failedStart is the container's last stop when its start failed and it
// left a message: the process exited with an error of its own (not a
// signal, not the OOM killer, not the kubelet's word that it vanished), or
// could not be started at all. The kubelet starts a container again at
// once after its first failure, so the pod may say running (not ready) by
// the time its status is written: its last attempt is the news.
func failedStart(cs api.ContainerStatus) *api.ContainerStateTerminated {
	t := cs.State.Terminated
	if t == nil {
		t = cs.LastState.Terminated
	}
	if t == nil || strings.TrimSpace(t.Message) == "" {
		return nil
	}
	switch {
	case t.Reason == "StartError":
		return t
	case t.Reason == "Error" && t.ExitCode > 0 && t.ExitCode < 128:
		return t
	}
	return nil
}

// readySince says the pod was ready after attempt t ended: a later
// attempt served, so t's failure is old news. The Ready condition turned
// False after t ended only if it was True between (a pod never ready
// has it False since its first status, before its first attempt ended).
// Its time has the second as its unit (as Kubernetes'), so a pod that was
// ready and unready within the second t ended counts as not ready since.
func readySince(p *api.Pod, t *api.ContainerStateTerminated) bool {
	c := podstatus.ReadyCondition(p)
	return c != nil && (c.Status == api.ConditionTrue ||
		(c.LastTransitionTime != nil && t.FinishedAt != nil && c.LastTransitionTime.After(t.FinishedAt.Truncate(time.Second))))
}

func startFailedReason(cs api.ContainerStatus) string {
	if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
		return w.Reason
	}
	return "StartFailed"
}
