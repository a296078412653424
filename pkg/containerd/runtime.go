package containerd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	eventtypes "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/containerd/remotes/docker"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
	"github.com/distribution/reference"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// Namespace is the containerd namespace of every minik8s container and image.
const Namespace = "minik8s"

// Snapshotter prepares container root filesystems.
const Snapshotter = "overlayfs"

// Labels the kubelet puts on its containers, so that it finds them again
// after a restart and never touches another node's.
const (
	LabelNode          = "minik8s.io/node"
	LabelPodNamespace  = "minik8s.io/pod-namespace"
	LabelPodName       = "minik8s.io/pod-name"
	LabelPodUID        = "minik8s.io/pod-uid"
	LabelContainerName = "minik8s.io/container-name"
	LabelRestartCount  = "minik8s.io/restart-count"
)

// Runtime is a connection to one containerd.
type Runtime struct {
	client *containerd.Client
	// pullTimeout bounds one pull, so that an unreachable registry ends in
	// an error rather than a hang.
	pullTimeout time.Duration
	logger      string

	mu sync.Mutex
	// oomed holds containers that containerd reported out of memory.
	oomed map[string]bool
}

// Options of New.
type Options struct {
	// PullTimeout bounds one image pull; default 2 minutes.
	PullTimeout time.Duration
	// Logger, when set, is the container logger containerd's shim runs
	// beside each container (cmd/minik8s-logger): output is kept with the
	// time of each line. Without it the shim writes output as it comes.
	Logger string
}

// New connects to the containerd listening on address (a unix socket path).
func New(ctx context.Context, address string, opts Options) (*Runtime, error) {
	if opts.PullTimeout <= 0 {
		opts.PullTimeout = 2 * time.Minute
	}
	if _, err := os.Stat(address); err != nil {
		return nil, fmt.Errorf("containerd socket %s: %w: %v", address, errdefs.ErrUnavailable, err)
	}
	c, err := containerd.New(address, containerd.WithDefaultNamespace(Namespace), containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w: %v", address, errdefs.ErrUnavailable, err)
	}
	return &Runtime{client: c, pullTimeout: opts.PullTimeout, logger: opts.Logger, oomed: map[string]bool{}}, nil
}

// Timestamped says whether container output is kept with the time of
// each line (the runtime has a logger).
func (r *Runtime) Timestamped() bool { return r.logger != "" }

// Close closes the connection; containers keep running.
func (r *Runtime) Close() error { return r.client.Close() }

func nsCtx(ctx context.Context) context.Context { return namespaces.WithNamespace(ctx, Namespace) }

// Version is containerd's version, for the node's info.
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(nsCtx(ctx))
	if err != nil {
		return "", wrap(err, "containerd version")
	}
	return "containerd://" + v.Version, nil
}

// wrap turns containerd's error classes into minik8s's.
func wrap(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%s: %w: %v", msg, errdefs.ErrNotFound, err)
	case cerrdefs.IsAlreadyExists(err):
		return fmt.Errorf("%s: %w: %v", msg, errdefs.ErrAlreadyExists, err)
	case cerrdefs.IsInvalidArgument(err):
		return fmt.Errorf("%s: %w: %v", msg, errdefs.ErrInvalid, err)
	case cerrdefs.IsUnavailable(err):
		return fmt.Errorf("%s: %w: %v", msg, errdefs.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// NormalizeRef writes an image reference the way containerd stores it
// ("python:3" becomes "docker.io/library/python:3").
func NormalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", errdefs.Invalid("image", "%q is not a valid image reference: %v", ref, err)
	}
	return named.String(), nil
}

// Mount binds a host path into a container.
type Mount struct {
	Source      string
	Destination string
	ReadOnly    bool
}

// ContainerSpec describes one container to create.
type ContainerSpec struct {
	ID     string
	Image  string
	Labels map[string]string
	// Command replaces the image's entrypoint, Args its cmd (Kubernetes' rule).
	Command    []string
	Args       []string
	Env        []string
	WorkingDir string
	Hostname   string
	Mounts     []Mount
	// MemoryLimit in bytes and MilliCPU in thousandths of a core; 0 is no limit.
	MemoryLimit int64
	MilliCPU    int64
	// LogPath is the file that receives stdout and stderr; containerd's
	// shim writes it, so logs survive a kubelet restart.
	LogPath string
	// NetNSPath is the network namespace the container joins (its pod's);
	// "" runs it on the node's network.
	NetNSPath string
	// ResolvConf is the file mounted at /etc/resolv.conf; "" mounts the
	// node's.
	ResolvConf string
	// HostsFile is the file mounted at /etc/hosts; "" mounts the node's.
	HostsFile string
	// Security confines the container; its zero value is the runtime's
	// default (the image's user, the default capabilities, seccomp's
	// default profile).
	Security Security
}

// resolvConf mounts path at /etc/resolv.conf, or the node's when path is "".
func resolvConf(path string) oci.SpecOpts {
	if path == "" {
		return oci.WithHostResolvconf
	}
	return oci.WithMounts([]specs.Mount{{Destination: "/etc/resolv.conf", Type: "bind", Source: path, Options: []string{"rbind", "ro"}}})
}

// hostsFile mounts path at /etc/hosts, or the node's when path is "".
func hostsFile(path string) oci.SpecOpts {
	if path == "" {
		return oci.WithHostHostsFile
	}
	return oci.WithMounts([]specs.Mount{{Destination: "/etc/hosts", Type: "bind", Source: path, Options: []string{"rbind", "ro"}}})
}

// CreateContainer creates the container and its root filesystem snapshot.
// It runs in the network namespace at s.NetNSPath, or on the node's
// network, with the node's /etc/hosts and resolv.conf.
func (r *Runtime) CreateContainer(ctx context.Context, s ContainerSpec) error {
	ctx = nsCtx(ctx)
	ref, err := NormalizeRef(s.Image)
	if err != nil {
		return err
	}
	img, err := r.client.GetImage(ctx, ref)
	if err != nil {
		return wrap(err, "image %s", ref)
	}
	imgSpec, err := img.Spec(ctx)
	if err != nil {
		return wrap(err, "image %s config", ref)
	}
	if err := s.Security.checkNonRoot(imgSpec.Config.User); err != nil {
		return err
	}
	network := oci.WithHostNamespace(specs.NetworkNamespace)
	if s.NetNSPath != "" {
		network = oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: s.NetNSPath})
	}
	opts := []oci.SpecOpts{
		oci.WithImageConfig(img),
		network,
		hostsFile(s.HostsFile),
		resolvConf(s.ResolvConf),
	}
	switch {
	case len(s.Command) > 0:
		opts = append(opts, oci.WithProcessArgs(append(append([]string{}, s.Command...), s.Args...)...))
	case len(s.Args) > 0:
		opts = append(opts, oci.WithImageConfigArgs(img, s.Args))
	}
	if len(s.Env) > 0 {
		opts = append(opts, oci.WithEnv(s.Env))
	}
	if s.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(s.WorkingDir))
	}
	if s.Hostname != "" {
		opts = append(opts, oci.WithHostname(s.Hostname))
	}
	if len(s.Mounts) > 0 {
		mounts := make([]specs.Mount, 0, len(s.Mounts))
		for _, m := range s.Mounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			mounts = append(mounts, specs.Mount{Type: "bind", Source: m.Source, Destination: m.Destination,
				Options: []string{"rbind", "rprivate", mode}})
		}
		opts = append(opts, oci.WithMounts(mounts))
	}
	if s.MemoryLimit > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(s.MemoryLimit)))
	}
	if s.MilliCPU > 0 {
		const period = 100000
		quota := s.MilliCPU * period / 1000
		if quota < 1000 {
			quota = 1000 // the kernel's minimum
		}
		opts = append(opts, oci.WithCPUCFS(quota, period))
	}
	opts = append(opts, s.Security.opts(imgSpec.Config.User)...)
	_, err = r.client.NewContainer(ctx, s.ID,
		containerd.WithImage(img),
		containerd.WithNewSnapshot(s.ID, img),
		containerd.WithContainerLabels(s.Labels),
		containerd.WithNewSpec(opts...),
	)
	if err != nil {
		// A half-made container must not leak its snapshot.
		_ = r.client.SnapshotService(Snapshotter).Remove(ctx, s.ID)
		return wrap(err, "creating container %s", s.ID)
	}
	return nil
}

// StartContainer creates the container's task with its output going to
// logPath and starts it. Once begun, it runs to its end even if ctx ends
// (see uninterrupted), so that a kubelet that stops has no task creation
// still under way in containerd, which a removal of the container would
// race and leave a shim behind.
func (r *Runtime) StartContainer(ctx context.Context, id, logPath string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting container %s: %w", id, err)
	}
	ctx, cancel := uninterrupted(nsCtx(ctx))
	defer cancel()
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return wrap(err, "container %s", id)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("log dir of %s: %w", id, err)
	}
	output := cio.LogFile(logPath)
	if r.logger != "" {
		output = cio.BinaryIO(r.logger, map[string]string{"path": logPath})
	}
	task, err := c.NewTask(ctx, output)
	if err != nil {
		return wrap(err, "creating task of %s", id)
	}
	if err := task.Start(ctx); err != nil {
		_, _ = task.Delete(ctx, containerd.WithProcessKill)
		return wrap(err, "starting %s", id)
	}
	return nil
}

// cleanupTimeout bounds a task creation or deletion that runs to its end
// even when the caller's context ends first.
const cleanupTimeout = time.Minute

// uninterrupted is ctx without its cancellation, bounded by cleanupTimeout.
// Creating or deleting a task must not be cut short: containerd that is cancelled
// after runc deleted the container but before the shim shut down drops
// the task from its list and leaves the shim running, with nothing left
// that would find it (a kubelet stopped while a pod terminated leaked one
// shim per container being removed).
func uninterrupted(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// Signal sends sig to the container's main process.
func (r *Runtime) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	ctx = nsCtx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return wrap(err, "container %s", id)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return wrap(err, "task of %s", id)
	}
	return wrap(task.Kill(ctx, sig), "signal %d to %s", sig, id)
}

// StopContainer sends SIGTERM, waits up to grace for the task to exit,
// then sends SIGKILL and waits for the exit. A container without a running
// task is left as it is.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = nsCtx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return wrap(err, "container %s", id)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		return wrap(err, "task of %s", id)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return wrap(err, "task status of %s", id)
	}
	if st.Status == containerd.Stopped {
		return nil
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		return wrap(err, "waiting for %s", id)
	}
	if grace > 0 {
		if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !cerrdefs.IsNotFound(err) {
			return wrap(err, "SIGTERM to %s", id)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exited:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !cerrdefs.IsNotFound(err) {
		return wrap(err, "SIGKILL to %s", id)
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RemoveContainer kills the task if it still runs and removes task,
// container and snapshot. A container that is already gone is no error.
// Once begun, the removal runs to its end even if ctx ends (see
// uninterrupted); a ctx that has already ended removes nothing.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("removing container %s: %w", id, err)
	}
	ctx, cancel := uninterrupted(nsCtx(ctx))
	defer cancel()
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			r.forgetOOM(id)
			return r.removeSnapshot(ctx, id)
		}
		return wrap(err, "container %s", id)
	}
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !cerrdefs.IsNotFound(err) {
			return wrap(err, "deleting task of %s", id)
		}
	} else if !cerrdefs.IsNotFound(err) {
		return wrap(err, "task of %s", id)
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !cerrdefs.IsNotFound(err) {
		return wrap(err, "deleting container %s", id)
	}
	r.forgetOOM(id)
	return r.removeSnapshot(ctx, id)
}

func (r *Runtime) removeSnapshot(ctx context.Context, id string) error {
	err := r.client.SnapshotService(Snapshotter).Remove(ctx, id)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return wrap(err, "removing snapshot %s", id)
	}
	return nil
}

func (r *Runtime) forgetOOM(id string) {
	r.mu.Lock()
	delete(r.oomed, id)
	r.mu.Unlock()
}

// Container is a container found by ListContainers.
type Container struct {
	ID        string
	Labels    map[string]string
	CreatedAt time.Time
}

// ListContainers lists the containers whose labels include all of labels.
func (r *Runtime) ListContainers(ctx context.Context, labels map[string]string) ([]Container, error) {
	ctx = nsCtx(ctx)
	var filters []string
	for k, v := range labels {
		filters = append(filters, fmt.Sprintf("labels.%q==%q", k, v))
	}
	filter := strings.Join(filters, ",")
	var cs []containerd.Container
	var err error
	if filter == "" {
		cs, err = r.client.Containers(ctx)
	} else {
		cs, err = r.client.Containers(ctx, filter)
	}
	if err != nil {
		return nil, wrap(err, "listing containers")
	}
	out := make([]Container, 0, len(cs))
	for _, c := range cs {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				continue
			}
			return nil, wrap(err, "container %s", c.ID())
		}
		out = append(out, Container{ID: c.ID(), Labels: info.Labels, CreatedAt: info.CreatedAt})
	}
	return out, nil
}

// SnapshotExists reports whether the snapshot of a container is still there.
func (r *Runtime) SnapshotExists(ctx context.Context, id string) (bool, error) {
	_, err := r.client.SnapshotService(Snapshotter).Stat(nsCtx(ctx), id)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, wrap(err, "snapshot %s", id)
}

// EventKind is what happened to a task.
type EventKind string

const (
	EventExit EventKind = "exit"
	EventOOM  EventKind = "oom"
)

// Event tells that a container's task exited or ran out of memory.
type Event struct {
	Kind        EventKind
	ContainerID string
}

// Events follows containerd's task events of the minik8s namespace until
// ctx ends, calling fn for each; it reconnects when the stream breaks.
// OOM events are remembered for ContainerStatus.
func (r *Runtime) Events(ctx context.Context, fn func(Event)) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		evc, errc := r.client.Subscribe(nsCtx(ctx),
			fmt.Sprintf(`namespace==%q,topic=="/tasks/exit"`, Namespace),
			fmt.Sprintf(`namespace==%q,topic=="/tasks/oom"`, Namespace))
	loop:
		for {
			select {
			case env := <-evc:
				backoff = 100 * time.Millisecond
				if env == nil || env.Event == nil {
					continue
				}
				ev, err := typeurl.UnmarshalAny(env.Event)
				if err != nil {
					continue
				}
				switch e := ev.(type) {
				case *eventtypes.TaskExit:
					if e.ID == e.ContainerID { // the main process, not an exec
						fn(Event{Kind: EventExit, ContainerID: e.ContainerID})
					}
				case *eventtypes.TaskOOM:
					r.mu.Lock()
					r.oomed[e.ContainerID] = true
					r.mu.Unlock()
					fn(Event{Kind: EventOOM, ContainerID: e.ContainerID})
				}
			case err := <-errc:
				if ctx.Err() != nil {
					return
				}
				log.WithError(err).Debug("containerd event stream ended, resubscribing")
				break loop
			}
		}
		if !wait.Sleep(ctx, backoff) {
			return
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}

// ErrImageNotPresent: the image is not in containerd and pulling is not allowed.
var ErrImageNotPresent = errors.New("image not present")

// HasImage reports whether the image is in containerd's minik8s namespace.
func (r *Runtime) HasImage(ctx context.Context, ref string) (bool, error) {
	name, err := NormalizeRef(ref)
	if err != nil {
		return false, err
	}
	_, err = r.client.GetImage(nsCtx(ctx), name)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap(err, "image %s", name)
	}
	return true, nil
}

// PullImage pulls and unpacks an image. Registries on loopback are spoken
// to over plain HTTP. A pull that does not finish within the pull timeout
// fails, so an unreachable registry never hangs a pod.
func (r *Runtime) PullImage(ctx context.Context, ref string) error {
	name, err := NormalizeRef(ref)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(nsCtx(ctx), r.pullTimeout)
	defer cancel()
	hc := &http.Client{Timeout: r.pullTimeout, Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		ResponseHeaderTimeout: 30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
	}}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(
		docker.WithClient(hc), docker.WithPlainHTTP(docker.MatchLocalhost))})
	_, err = r.client.Pull(ctx, name, containerd.WithPullUnpack, containerd.WithResolver(resolver),
		containerd.WithPullSnapshotter(Snapshotter))
	if err != nil {
		return fmt.Errorf("pulling %s: %w", name, err)
	}
	return nil
}
