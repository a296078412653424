package pod

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"

	"minik8s/kubelet/logs"
	"minik8s/kubelet/prober"
	"minik8s/kubelet/volume"
	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/quantity"
)

// syncContainer brings container i of the pod (of podContainers: init
// containers first) one step toward its spec: it notices exits, restarts
// after back-off, and starts what is missing.
func (w *Worker) syncContainer(ctx context.Context, p *api.Pod, i int) {
	spec := podContainers(p)[i]
	c := w.containers[spec.Name]
	if c.id != "" {
		st, err := w.rt.ContainerStatus(ctx, c.id)
		switch {
		case errdefs.IsNotFound(err):
			// Removed behind the kubelet's back: count it as a crash.
			w.log.WithField("container", c.name).Warn("container disappeared from containerd")
			c.id = ""
			if !c.exitHandled {
				w.handleExit(p, c, api.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
					Message: "the container disappeared from containerd", FinishedAt: now()})
			}
		case err != nil:
			w.log.WithError(err).WithField("container", c.name).Warn("container status")
			return
		case st.State == containerd.StateRunning:
			w.setRunning(c.name, c.id)
			if c.state.Running == nil {
				started := c.startedAt
				c.state = api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: &started}}
			}
			if c.prober == nil {
				w.startProber(ctx, spec, c)
			}
			if failed, msg := c.prober.LivenessFailed(); failed {
				w.log.WithField("container", c.name).Info("liveness probe failed; restarting the container")
				events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "Unhealthy", "Liveness probe failed: %s", msg)
				events.Eventf(w.cfg.Events, p, api.EventTypeNormal, "Killing", "Container %s failed liveness probe, will be restarted", c.name)
				c.prober.Stop()
				grace := w.preStop(ctx, p, spec, c.id, c.prober.KillGrace(w.grace(p)))
				c.prober = nil
				if err := w.rt.StopContainer(ctx, c.id, grace); err != nil {
					w.log.WithError(err).Warn("stopping an unhealthy container")
				}
				c.state.Running = nil
				c.state.Waiting = &api.ContainerStateWaiting{Reason: "Unhealthy", Message: msg}
				w.Poke()
			}
			return
		case st.State == containerd.StateExited:
			if !c.exitHandled {
				// Before the exit is told (logs -f ends on it): the shim may
				// still be writing the last output into the log.
				if err := w.rt.ReapContainer(ctx, c.id); err != nil {
					w.log.WithError(err).WithField("container", c.name).Warn("reaping an exited container")
				}
				term := api.ContainerStateTerminated{ExitCode: st.ExitCode, FinishedAt: timePtr(st.ExitedAt)}
				started := c.startedAt
				term.StartedAt = &started
				switch {
				case st.OOMKilled:
					term.Reason = "OOMKilled"
					term.Message = "the container used more memory than its limit and was killed"
				case st.ExitCode == 0:
					term.Reason = "Completed"
				default:
					term.Reason = "Error"
				}
				if st.ExitCode > 128 && st.ExitCode < 160 {
					term.Signal = st.ExitCode - 128
				}
				if msg := w.terminationMessage(ctx, spec, st.ExitCode); msg != "" {
					term.Message = msg
				}
				w.handleExit(p, c, term)
			}
		case st.State == containerd.StateCreated:
			// Created but never started (a kubelet that died in between):
			// start it now.
			if err := w.rt.StartContainer(ctx, c.id, logs.Path(w.dir, c.name)); err != nil {
				w.startFailed(ctx, p, c, err)
				return
			}
			c.startedAt = time.Now().UTC()
			return
		default:
			return
		}
	}
	if c.done {
		return
	}
	if time.Now().Before(c.retryAt) {
		return
	}
	if c.id != "" {
		w.remove(ctx, c.id)
		c.id = ""
	}
	w.start(ctx, p, i, c)
}

func now() *time.Time {
	t := time.Now().UTC()
	return &t
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return now()
	}
	t = t.UTC()
	return &t
}

// setRunning records the containerd id of the container's running task
// ("" once it stopped), for the kubelet's log and exec handlers.
func (w *Worker) setRunning(name, id string) {
	w.mu.Lock()
	w.running[name] = id
	w.mu.Unlock()
}

// handleExit records the end of the container's current attempt and
// decides, by the restart policy, whether and when it starts again.
func (w *Worker) handleExit(p *api.Pod, c *container, term api.ContainerStateTerminated) {
	c.exitHandled = true
	if c.prober != nil {
		c.prober.Stop()
		c.prober = nil
	}
	// Whether or not it starts again: logs -f of this run ends, and exec
	// says it is not running.
	w.setRunning(c.name, "")
	fields := log.Fields{"container": c.name, "exitCode": term.ExitCode, "reason": term.Reason}
	if !shouldRestart(restartPolicy(p, c.name), term.ExitCode) {
		c.state = api.ContainerState{Terminated: &term}
		c.done = true
		w.log.WithFields(fields).Info("container exited")
		return
	}
	c.lastState = api.ContainerState{Terminated: &term}
	delay := w.backoff(c.restartCount)
	// A container that ran long enough has earned a fresh back-off.
	if term.StartedAt != nil && term.FinishedAt != nil && term.FinishedAt.Sub(*term.StartedAt) > 2*w.cfg.BackoffMax {
		delay = 0
	}
	c.retryAt = time.Now().Add(delay)
	if delay > 0 {
		c.state = waiting("CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container %s", delay.Round(time.Second), c.name))
		events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", c.name)
	} else {
		c.state = waiting("ContainerCreating", "")
	}
	fields["restartIn"] = delay
	w.log.WithFields(fields).Info("container exited; restarting")
}

// startFailed: the task could not start (no such executable, say); it
// counts as an exit with code 128, and the restart policy applies.
func (w *Worker) startFailed(ctx context.Context, p *api.Pod, c *container, err error) {
	w.log.WithError(err).WithField("container", c.name).Warn("starting container")
	started := time.Now().UTC()
	c.exitHandled = false
	w.handleExit(p, c, api.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error(),
		StartedAt: &started, FinishedAt: now()})
}

// start creates and starts a new attempt of the container.
func (w *Worker) start(ctx context.Context, p *api.Pod, i int, c *container) {
	spec := podContainers(p)[i]
	if err := w.ensureImage(w.pullCtx, spec); err != nil {
		if ctx.Err() == nil && w.pullCtx.Err() != nil {
			return // the pod is being deleted
		}
		c.pullFailures++
		reason := "ErrImagePull"
		if c.pullFailures > 1 {
			reason = "ImagePullBackOff"
		}
		if errdefs.IsInvalid(err) {
			reason = "InvalidImageName"
		}
		c.state = waiting(reason, err.Error())
		c.retryAt = time.Now().Add(w.backoff(int32(c.pullFailures)))
		w.log.WithError(err).WithField("container", c.name).Warn("image not available")
		events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "Failed", "Failed to pull image %q: %v", spec.Image, err)
		return
	}
	if c.pullFailures > 0 || !c.everStarted {
		events.Eventf(w.cfg.Events, p, api.EventTypeNormal, "Pulled", "Container image %q is on the node", spec.Image)
	}
	c.pullFailures = 0
	attempt := c.restartCount
	if c.everStarted {
		attempt++
	}
	id := newContainerID(p.Name, spec.Name)
	cs, err := w.containerSpec(ctx, p, i, id, attempt)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		w.log.WithError(err).WithField("container", c.name).Warn("cannot make the container's config; retrying after back-off")
		c.state = waiting("CreateContainerConfigError", err.Error())
		c.retryAt = time.Now().Add(w.backoff(1))
		return
	}
	if err := w.rt.CreateContainer(ctx, cs); err != nil {
		// What the spec asks and the image cannot give (runAsNonRoot of a
		// root image) is the config's error, as Kubernetes says it.
		reason := "CreateContainerError"
		if errdefs.IsInvalid(err) {
			reason = "CreateContainerConfigError"
		}
		c.state = waiting(reason, err.Error())
		c.retryAt = time.Now().Add(w.backoff(1))
		w.log.WithError(err).WithField("container", c.name).Warn("creating container")
		events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "Failed", "Error: %v", err)
		return
	}
	events.Eventf(w.cfg.Events, p, api.EventTypeNormal, "Created", "Created container %s", c.name)
	c.id = id
	c.restartCount = attempt
	c.everStarted = true
	c.exitHandled = false
	c.startedAt = time.Now().UTC()
	if err := w.rt.StartContainer(ctx, id, cs.LogPath); err != nil {
		w.startFailed(ctx, p, c, err)
		return
	}
	if !w.postStart(ctx, p, spec, c) {
		return // its exit, seen next, restarts it by the policy
	}
	started := c.startedAt
	c.state = api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: &started}}
	w.setRunning(c.name, c.id)
	events.Eventf(w.cfg.Events, p, api.EventTypeNormal, "Started", "Started container %s", c.name)
	w.startProber(ctx, spec, c)
	w.log.WithFields(log.Fields{"container": c.name, "id": id, "restartCount": attempt}).Info("container started")
}

func (w *Worker) startProber(ctx context.Context, spec api.Container, c *container) {
	id := c.id
	exec := func(ctx context.Context, cmd []string) (int, string, error) { return w.rt.Exec(ctx, id, cmd) }
	c.prober = prober.Start(ctx, w.podAddress(), w.assigned[spec.Name], exec,
		prober.Probes{Startup: spec.StartupProbe, Readiness: spec.ReadinessProbe, Liveness: spec.LivenessProbe}, w.Poke)
}

func (w *Worker) grace(p *api.Pod) time.Duration {
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// ensureImage makes sure the image is in containerd, pulling it by the
// container's pull policy.
func (w *Worker) ensureImage(ctx context.Context, spec api.Container) error {
	if _, err := containerd.NormalizeRef(spec.Image); err != nil {
		return err
	}
	has, err := w.rt.HasImage(ctx, spec.Image)
	if err != nil {
		return err
	}
	switch {
	case has && spec.ImagePullPolicy != "Always":
		return nil
	case !has && spec.ImagePullPolicy == "Never":
		return fmt.Errorf("image %q is not present on node %s and the pull policy is Never", spec.Image, w.cfg.NodeName)
	}
	if err := w.rt.PullImage(ctx, spec.Image); err != nil {
		if has {
			w.log.WithError(err).WithField("image", spec.Image).Warn("pull failed; using the image the node has")
			return nil
		}
		return fmt.Errorf("image %q is not present on node %s and pulling it failed: %w", spec.Image, w.cfg.NodeName, err)
	}
	return nil
}

// newContainerID is unique and says whose container it is.
func newContainerID(podName, containerName string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%s-%s", idPart(podName, 40), idPart(containerName, 20), hex.EncodeToString(b))
}

// idPart keeps letters and digits of s (others become '-'), at most n.
func idPart(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	out := b.String()
	if len(out) > n {
		out = out[:n]
	}
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	out = strings.Trim(out, "-")
	if out == "" {
		out = "c"
	}
	return out
}

// limits parses the container's cpu and memory limits; field is the
// container's ("spec.containers[0]").
func limits(c api.Container, field string) (milliCPU, memory int64, err error) {
	field += ".resources.limits"
	if q, ok := c.Resources.Limits[api.ResourceCPU]; ok {
		if milliCPU, err = quantity.MilliCPU(q); err != nil || milliCPU < 0 {
			return 0, 0, errdefs.Invalid(field+".cpu", "cannot parse cpu limit %q: %v", q, err)
		}
	}
	if q, ok := c.Resources.Limits[api.ResourceMemory]; ok {
		if memory, err = quantity.Bytes(q); err != nil || memory < 0 {
			return 0, 0, errdefs.Invalid(field+".memory", "cannot parse memory limit %q: %v", q, err)
		}
	}
	return milliCPU, memory, nil
}

// containerSpec turns container i of the pod into a runtime spec.
func (w *Worker) containerSpec(ctx context.Context, p *api.Pod, i int, id string, attempt int32) (containerd.ContainerSpec, error) {
	c := podContainers(p)[i]
	milliCPU, memory, err := limits(c, containerField(p, i))
	if err != nil {
		return containerd.ContainerSpec{}, err
	}
	env, err := w.envFor(ctx, p, i)
	if err != nil {
		return containerd.ContainerSpec{}, err
	}
	var mounts []containerd.Mount
	for j, m := range c.VolumeMounts {
		v, ok := w.volumes[m.Name]
		if !ok {
			return containerd.ContainerSpec{}, errdefs.Invalid(fmt.Sprintf("%s.volumeMounts[%d].name", containerField(p, i), j), "no volume named %q", m.Name)
		}
		if !filepath.IsAbs(m.MountPath) {
			return containerd.ContainerSpec{}, errdefs.Invalid(fmt.Sprintf("%s.volumeMounts[%d].mountPath", containerField(p, i), j), "%q is not absolute", m.MountPath)
		}
		source := v.HostPath
		sub, subField := m.SubPath, "subPath"
		if m.SubPathExpr != "" {
			// The container's variables expanded, then held to a sub
			// path's rules, as Kubernetes' kubelet does.
			sub, subField = expansion.Expand(m.SubPathExpr, expansion.MappingFuncFor(envMap(env))), "subPathExpr"
		}
		if sub != "" {
			if source, err = volume.BindSubPath(w.dir, m.Name, c.Name, j, v.HostPath, sub); err != nil {
				return containerd.ContainerSpec{}, fmt.Errorf("%s.volumeMounts[%d].%s: %w", containerField(p, i), j, subField, err)
			}
		}
		mounts = append(mounts, containerd.Mount{Source: source, Destination: m.MountPath, ReadOnly: v.ReadOnly || m.ReadOnly})
	}
	mounts = append(mounts, w.tokenMount(c)...)
	term, err := w.terminationMount(c)
	if err != nil {
		return containerd.ContainerSpec{}, err
	}
	mounts = append(mounts, term...)
	return containerd.ContainerSpec{
		ID:    id,
		Image: c.Image,
		Labels: map[string]string{
			containerd.LabelNode:          w.cfg.NodeName,
			containerd.LabelPodNamespace:  p.Namespace,
			containerd.LabelPodName:       p.Name,
			containerd.LabelPodUID:        p.UID,
			containerd.LabelContainerName: c.Name,
			containerd.LabelRestartCount:  strconv.Itoa(int(attempt)),
		},
		Command:     expandCommand(c.Command, env),
		Args:        expandCommand(c.Args, env),
		Env:         env,
		WorkingDir:  c.WorkingDir,
		Hostname:    podHostname(p),
		Mounts:      mounts,
		MemoryLimit: memory,
		MilliCPU:    milliCPU,
		LogPath:     logs.Path(w.dir, c.Name),
		NetNSPath:   w.netnsPath,
		ResolvConf:  w.resolvConf(p),
		HostsFile:   w.hostsFile(p),
		Security:    security(p, &c),
	}, nil
}

func envName(s string) string {
	return strings.ToUpper(strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s))
}

// hostsFile is the pod's own /etc/hosts, or "" for the node's.
func (w *Worker) hostsFile(p *api.Pod) string {
	if !hasOwnHosts(p, w.podIP, w.ownNetwork(p)) {
		return ""
	}
	return hostsPath(w.dir)
}

// resolvConf is the pod's own resolv.conf, or "" for the node's.
func (w *Worker) resolvConf(p *api.Pod) string {
	if !hasOwnResolvConf(p, w.cfg.DNS, w.ownNetwork(p)) {
		return ""
	}
	return resolvConfPath(w.dir)
}
