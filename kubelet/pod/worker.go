// Package pod runs one pod on the node: a worker per pod keeps its
// containers in containerd in line with the pod's spec (start, restart
// with back-off, probe, stop) and writes the pod's status.
package pod

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet/network"
	"minik8s/kubelet/prober"
	"minik8s/kubelet/volume"
	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/function"
)

// Runtime is what a pod worker needs of containerd.
type Runtime interface {
	HasImage(ctx context.Context, ref string) (bool, error)
	PullImage(ctx context.Context, ref string) error
	CreateContainer(ctx context.Context, s containerd.ContainerSpec) error
	StartContainer(ctx context.Context, id, logPath string) error
	ContainerStatus(ctx context.Context, id string) (containerd.Status, error)
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
	// ReapContainer deletes an exited container's task, keeping its exit
	// status: after it the container's log is complete.
	ReapContainer(ctx context.Context, id string) error
	// Exec runs a command in a running container (exec probes).
	Exec(ctx context.Context, id string, cmd []string) (code int, output string, err error)
}

var _ Runtime = (*containerd.Runtime)(nil)

// API is what a pod worker needs of the apiserver.
type API interface {
	volume.Getter
	volume.TokenSource
	// GetService reads a Service: the kubelet reads default/kubernetes for
	// KUBERNETES_SERVICE_HOST and _PORT.
	GetService(ctx context.Context, namespace, name string) (*api.Service, error)
	UpdatePodStatus(ctx context.Context, pod *api.Pod) error
	// DeletePod removes the pod object for good (grace 0, uid precondition).
	DeletePod(ctx context.Context, namespace, name, uid string) error
}

// Config is shared by the workers of one kubelet.
type Config struct {
	NodeName string
	NodeIP   string
	RootDir  string
	// BackoffBase and BackoffMax bound the delay before restarting a
	// crashed container or pulling an image again (10s and 5m by default).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// ResyncPeriod is how often a worker looks at its containers without
	// being told to.
	ResyncPeriod time.Duration
	// Network gives pods their own network namespaces and addresses; nil
	// runs every pod on the node's network, as hostNetwork pods always run.
	Network PodNetwork
	// DNS, with Network, is the resolver configuration of pods with their
	// own network: the cluster DNS server and the cluster domain.
	DNS DNSConfig
	// Events records what happens to the pods' containers (nil: nothing).
	Events events.EventRecorder
	// Allocatable is the node's: the downward API gives it for a limit a
	// container does not set.
	Allocatable api.ResourceList
}

// DNSConfig says how pods with their own network resolve names.
type DNSConfig struct {
	// Server is the cluster DNS server's address, reachable from the pods.
	Server string
	// Domain is the cluster domain (cluster.local).
	Domain string
}

// PodNetwork sets up and tears down pods' own networks (kubelet/network).
type PodNetwork interface {
	SetUp(ctx context.Context, p network.Pod) (path, ip string, err error)
	TearDown(ctx context.Context, p network.Pod) error
}

func (c *Config) setDefaults() {
	if c.BackoffBase <= 0 {
		c.BackoffBase = 10 * time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.ResyncPeriod <= 0 {
		c.ResyncPeriod = time.Second
	}
}

// Dir is a pod's dir under the kubelet's root: logs, volumes, ports.
func Dir(rootDir, uid string) string { return filepath.Join(rootDir, "pods", uid) }

// Worker runs one pod.
type Worker struct {
	cfg   *Config
	rt    Runtime
	api   API
	ports *Ports
	uid   string
	dir   string
	log   *log.Entry

	mu      sync.Mutex
	pod     *api.Pod
	gone    bool
	running map[string]string // container name -> the id of its running task

	poke     chan struct{}
	finished chan struct{}
	// cancelPull ends an image pull in progress when the pod is deleted.
	cancelPull context.CancelFunc

	// Owned by the worker's goroutine.
	pullCtx    context.Context
	containers map[string]*container
	adopted    []containerd.Container
	assigned   map[string][]api.ContainerPort
	volumes    map[string]volume.Volume
	token      *volume.Token // nil: the pod runs without a token
	prepared   bool
	preStopped bool // the preStop hooks ran
	// netnsPath and podIP: the pod's own network, when it has one.
	netnsPath, podIP string
	failure          *podFailure
	startTime        time.Time
	written          []byte
	conditions       map[string]api.PodCondition
}

type podFailure struct{ reason, message string }

// container is the worker's record of one container of the pod.
type container struct {
	name         string
	id           string // containerd id of the current attempt
	restartCount int32
	everStarted  bool
	exitHandled  bool
	done         bool // terminated for good (restart policy)
	state        api.ContainerState
	lastState    api.ContainerState
	startedAt    time.Time
	retryAt      time.Time
	pullFailures int
	prober       *prober.Worker
	imageID      string
}

// NewWorker makes the worker of pod; adopted are containers of this pod
// that containerd already has (after a kubelet restart).
func NewWorker(cfg *Config, rt Runtime, apiClient API, ports *Ports, p *api.Pod, adopted []containerd.Container) *Worker {
	cfg.setDefaults()
	w := &Worker{
		cfg: cfg, rt: rt, api: apiClient, ports: ports, uid: p.UID, dir: Dir(cfg.RootDir, p.UID),
		log:     log.WithFields(log.Fields{"pod": p.Namespace + "/" + p.Name, "uid": p.UID}),
		pod:     p,
		running: map[string]string{},
		poke:    make(chan struct{}, 1), finished: make(chan struct{}),
		containers: map[string]*container{},
		adopted:    adopted,
		conditions: map[string]api.PodCondition{},
	}
	return w
}

// UID of the worker's pod.
func (w *Worker) UID() string { return w.uid }

// Pod is the latest version of the pod the worker was given.
func (w *Worker) Pod() *api.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// Update hands the worker a newer version of its pod.
func (w *Worker) Update(p *api.Pod) {
	w.mu.Lock()
	w.pod = p
	if p.DeletionTimestamp != nil && w.cancelPull != nil {
		w.cancelPull()
	}
	w.mu.Unlock()
	w.Poke()
}

// Gone tells the worker that its pod object no longer exists: it removes
// the pod's containers and files and ends.
func (w *Worker) Gone() {
	w.mu.Lock()
	w.gone = true
	if w.cancelPull != nil {
		w.cancelPull()
	}
	w.mu.Unlock()
	w.Poke()
}

// Poke makes the worker look at its pod now.
func (w *Worker) Poke() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// Finished is closed when the pod's containers and files are gone.
func (w *Worker) Finished() <-chan struct{} { return w.finished }

// ContainerRunning tells whether a container of the pod runs (or will run
// again): a followed log ends when it does not.
func (w *Worker) ContainerRunning(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running[name] != ""
}

// RunningContainer is the containerd id of the container named name while
// it runs.
func (w *Worker) RunningContainer(name string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := w.running[name]
	return id, id != ""
}

// RunningContainers are the containerd ids of the containers that run,
// by name.
func (w *Worker) RunningContainers() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.running))
	for name, id := range w.running {
		if id != "" {
			out[name] = id
		}
	}
	return out
}

// Dir is the pod's dir.
func (w *Worker) Dir() string { return w.dir }

// Run works until the pod is gone (then Finished is closed) or ctx ends
// (the kubelet stops; containers keep running).
func (w *Worker) Run(ctx context.Context) {
	defer w.stopProbers()
	t := time.NewTicker(w.cfg.ResyncPeriod)
	defer t.Stop()
	for {
		if w.sync(ctx) {
			close(w.finished)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-w.poke:
		case <-t.C:
		}
	}
}

func (w *Worker) stopProbers() {
	for _, c := range w.containers {
		if c.prober != nil {
			c.prober.Stop()
			c.prober = nil
		}
	}
}

func (w *Worker) snapshot() (*api.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.gone
}

func terminalPhase(phase string) bool { return phase == api.PodSucceeded || phase == api.PodFailed }

// sync makes one pass; true when the pod is finished.
func (w *Worker) sync(ctx context.Context) bool {
	p, gone := w.snapshot()
	if gone || p.DeletionTimestamp != nil {
		return w.terminate(ctx, p, gone)
	}
	if w.startTime.IsZero() {
		w.init(ctx, p)
	}
	if !w.prepared && w.failure == nil {
		w.prepare(ctx, p)
	}
	if w.prepared && w.failure == nil {
		pullCtx, cancel := context.WithCancel(ctx)
		w.mu.Lock()
		w.cancelPull = cancel
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			w.cancelPull = nil
			w.mu.Unlock()
			cancel()
		}()
		w.pullCtx = pullCtx
		w.refreshToken(ctx, p)
		w.refreshVolumes(ctx, p)
		if w.syncInit(ctx, p) {
			for i := range p.Spec.Containers {
				if ctx.Err() != nil {
					return false
				}
				w.syncContainer(ctx, p, len(p.Spec.InitContainers)+i)
			}
		}
	}
	w.writeStatus(ctx, p)
	return false
}

func shouldRestart(policy string, exitCode int32) bool {
	switch policy {
	case api.RestartPolicyNever:
		return false
	case api.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// backoff is the wait before the next restart of a container that has
// restarted n times: none for the first, then base doubling up to max.
func (w *Worker) backoff(n int32) time.Duration {
	if n <= 0 {
		return 0
	}
	d := w.cfg.BackoffBase
	for i := int32(1); i < n && d < w.cfg.BackoffMax; i++ {
		d *= 2
	}
	if d > w.cfg.BackoffMax {
		d = w.cfg.BackoffMax
	}
	return d
}

func (w *Worker) remove(ctx context.Context, id string) {
	if err := w.rt.RemoveContainer(ctx, id); err != nil && ctx.Err() == nil {
		w.log.WithError(err).WithField("id", id).Warn("removing container")
	}
}

// terminate stops the pod's containers (SIGTERM, the grace period, SIGKILL),
// removes them and the pod's files, and deletes the pod object.
func (w *Worker) terminate(ctx context.Context, p *api.Pod, gone bool) bool {
	grace := time.Duration(0)
	if !gone {
		g := int64(30)
		if p.Spec.TerminationGracePeriodSeconds != nil {
			g = *p.Spec.TerminationGracePeriodSeconds
		}
		if p.DeletionGracePeriodSeconds != nil {
			g = *p.DeletionGracePeriodSeconds
		}
		grace = time.Duration(g) * time.Second
		for _, c := range p.Spec.Containers {
			events.Eventf(w.cfg.Events, p, api.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
		}
		if p.DeletionTimestamp != nil {
			// A kubelet that restarts mid-way does not start the wait again.
			if left := time.Until(p.DeletionTimestamp.Add(grace)); left < grace {
				grace = max(left, 0)
			}
		}
	}
	if !gone && grace > 0 && !w.preStopped {
		// Once: a termination retried (a removal that failed) does not
		// run them again in stopped containers.
		grace = w.preStops(ctx, p, grace)
		w.preStopped = true
	}
	w.stopProbers()
	ids := map[string]bool{}
	for _, c := range w.containers {
		if c.id != "" {
			ids[c.id] = true
		}
	}
	for _, a := range w.adopted {
		ids[a.ID] = true
	}
	var wg sync.WaitGroup
	for id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.rt.StopContainer(ctx, id, grace); err != nil && !errdefs.IsNotFound(err) && ctx.Err() == nil {
				w.log.WithError(err).WithField("id", id).Warn("stopping container")
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return false
	}
	for id := range ids {
		if err := w.rt.RemoveContainer(ctx, id); err != nil {
			w.log.WithError(err).WithField("id", id).Warn("removing container; will retry")
			return false
		}
	}
	for _, c := range w.containers {
		c.id = ""
	}
	w.adopted = nil
	if w.ownNetwork(p) {
		// The containers are gone: the namespace and address can go.
		if err := w.cfg.Network.TearDown(ctx, w.networkPod(p)); err != nil {
			w.log.WithError(err).Warn("tearing down the pod's network; will retry")
			return false
		}
		w.netnsPath, w.podIP = "", ""
	}
	w.mu.Lock()
	w.running = map[string]string{}
	w.mu.Unlock()
	w.ports.Release(w.uid)
	if err := volume.RemovePodDir(w.dir); err != nil {
		w.log.WithError(err).Warn("removing pod dir")
	}
	if !gone {
		err := w.api.DeletePod(ctx, p.Namespace, p.Name, p.UID)
		if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
			w.log.WithError(err).Warn("deleting pod; will retry")
			return false
		}
	}
	w.log.Info("pod removed")
	return true
}

// writeStatus sends the pod's status when it changed.
func (w *Worker) writeStatus(ctx context.Context, p *api.Pod) {
	st := w.status(p)
	data, _ := json.Marshal(st)
	if string(data) == string(w.written) {
		return
	}
	out := *p
	out.ResourceVersion = ""
	out.Status = st
	if err := w.api.UpdatePodStatus(ctx, &out); err != nil {
		if !errdefs.IsNotFound(err) && ctx.Err() == nil {
			w.log.WithError(err).Warn("writing pod status")
		}
		return
	}
	w.written = data
}

// ownNetwork reports whether the pod has (or gets) a network of its own.
func (w *Worker) ownNetwork(p *api.Pod) bool {
	return w.cfg.Network != nil && (p == nil || !p.Spec.HostNetwork)
}

func (w *Worker) networkPod(p *api.Pod) network.Pod {
	np := network.Pod{UID: w.uid}
	if p == nil {
		return np
	}
	np.Namespace, np.Name = p.Namespace, p.Name
	np.Fenced = function.IsFunctionPod(p.Labels)
	for _, c := range podContainers(p) {
		for _, port := range c.Ports {
			if port.HostPort != 0 && port.ContainerPort != 0 {
				proto := port.Protocol
				if proto == "" {
					proto = "TCP"
				}
				np.Ports = append(np.Ports, network.PortMapping{HostPort: port.HostPort, ContainerPort: port.ContainerPort, Protocol: proto, HostIP: port.HostIP})
			}
		}
	}
	return np
}

// podAddress is where the pod is reached: its own IP, or its node's.
func (w *Worker) podAddress() string {
	if w.podIP != "" {
		return w.podIP
	}
	return w.cfg.NodeIP
}
