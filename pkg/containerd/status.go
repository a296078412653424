package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	containerd "github.com/containerd/containerd"
	cerrdefs "github.com/containerd/errdefs"

	"minik8s/pkg/errdefs"
)

// State of a container's task.
type State string

const (
	// StateCreated: the container exists without a task (never started,
	// or its task was removed without ReapContainer).
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
	StateUnknown State = "unknown"
)

// Status is what containerd knows of one container.
type Status struct {
	ID        string
	State     State
	Pid       uint32
	ExitCode  int32
	ExitedAt  time.Time
	OOMKilled bool
	Labels    map[string]string
	CreatedAt time.Time
}

// ContainerStatus reads the state of a container and of its task.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (Status, error) {
	ctx = nsCtx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return Status{}, wrap(err, "container %s", id)
	}
	st, _, err := r.status(ctx, c)
	return st, err
}

// status reads the state of container c and returns its task too, nil
// when it has none.
func (r *Runtime) status(ctx context.Context, c containerd.Container) (Status, containerd.Task, error) {
	id := c.ID()
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return Status{}, nil, wrap(err, "container %s", id)
	}
	st := Status{ID: id, State: StateCreated, Labels: info.Labels, CreatedAt: info.CreatedAt}
	task, err := c.Task(ctx, nil)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return reaped(st), nil, nil
		}
		return st, nil, wrap(err, "task of %s", id)
	}
	ts, err := task.Status(ctx)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return reaped(st), nil, nil
		}
		return st, nil, wrap(err, "task status of %s", id)
	}
	st.Pid = task.Pid()
	switch ts.Status {
	case containerd.Running, containerd.Pausing, containerd.Paused:
		st.State = StateRunning
	case containerd.Created:
		st.State = StateCreated
	case containerd.Stopped:
		st.State = StateExited
		st.ExitCode = int32(ts.ExitStatus)
		st.ExitedAt = ts.ExitTime
		st.OOMKilled = r.wasOOMKilled(ctx, id, c)
	default:
		st.State = StateUnknown
	}
	return st, task, nil
}

// wasOOMKilled: containerd's OOM event, or the cgroup's own counter (which
// still exists until the task is deleted, and which a kubelet that was
// down when the event came can read).
func (r *Runtime) wasOOMKilled(ctx context.Context, id string, c containerd.Container) bool {
	r.mu.Lock()
	oom := r.oomed[id]
	r.mu.Unlock()
	if oom {
		return true
	}
	spec, err := c.Spec(ctx)
	if err != nil || spec.Linux == nil || spec.Linux.CgroupsPath == "" {
		return false
	}
	return cgroupOOMKills(spec.Linux.CgroupsPath) > 0
}

// cgroupOOMKills reads the oom_kill counter of a cgroup (v2 memory.events
// or v1 memory.oom_control).
func cgroupOOMKills(path string) int {
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup", path, "memory.events"),
		filepath.Join("/sys/fs/cgroup/memory", path, "memory.oom_control"),
	} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(line, " ")
			if ok && k == "oom_kill" {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
	}
	return 0
}

// Labels that keep how a container ended once its task is deleted
// (ReapContainer), for ContainerStatus.
const (
	labelExitCode  = "minik8s.io/exit-code"
	labelExitedAt  = "minik8s.io/exited-at"
	labelOOMKilled = "minik8s.io/oom-killed"
)

// ReapContainer deletes the task of an exited container and keeps how it
// ended in the container's labels, where ContainerStatus reads it. The
// shim reports the exit before it has necessarily copied the last of the
// output into the log, and copies until the task is deleted: once this
// returns the log is complete. It also ends the shim, which would
// otherwise stay until the container is removed. A container without a
// task is left as it is; one whose task has not exited is a conflict.
func (r *Runtime) ReapContainer(ctx context.Context, id string) error {
	// Deleting must not be cut short (see uninterrupted).
	ctx, cancel := uninterrupted(nsCtx(ctx))
	defer cancel()
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return wrap(err, "container %s", id)
	}
	st, task, err := r.status(ctx, c)
	if err != nil || task == nil {
		return err
	}
	if st.State != StateExited {
		return fmt.Errorf("reaping container %s: %w: its task is %s", id, errdefs.ErrConflict, st.State)
	}
	// The labels first: a kubelet that stops in between still finds the
	// stopped task, and then the labels.
	if _, err := c.SetLabels(ctx, map[string]string{
		labelExitCode:  strconv.Itoa(int(st.ExitCode)),
		labelExitedAt:  st.ExitedAt.UTC().Format(time.RFC3339Nano),
		labelOOMKilled: strconv.FormatBool(st.OOMKilled),
	}); err != nil {
		return wrap(err, "recording the exit of %s", id)
	}
	if _, err := task.Delete(ctx); err != nil && !cerrdefs.IsNotFound(err) {
		return wrap(err, "deleting the task of %s", id)
	}
	r.forgetOOM(id)
	return nil
}

// reaped is the status of a container without a task: exited as its
// labels say when ReapContainer deleted the task, created otherwise.
func reaped(st Status) Status {
	code, err := strconv.Atoi(st.Labels[labelExitCode])
	if err != nil {
		return st
	}
	st.State = StateExited
	st.ExitCode = int32(code)
	st.ExitedAt, _ = time.Parse(time.RFC3339Nano, st.Labels[labelExitedAt])
	st.OOMKilled = st.Labels[labelOOMKilled] == "true"
	return st
}
