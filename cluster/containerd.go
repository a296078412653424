package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	shimapi "github.com/containerd/containerd/api/runtime/task/v2"
	"github.com/containerd/ttrpc"
	log "github.com/sirupsen/logrus"

	"minik8s/kubelet"
	"minik8s/kubelet/network"
	"minik8s/pkg/containerd"
)

// startContainerd installs containerd and runc when missing, then starts a
// containerd private to this cluster under dataDir.
func startContainerd(ctx context.Context, dataDir string) (*containerd.Daemon, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("running containers needs root: run `minik8s up` as root, or give --containerd-address of a containerd you can use")
	}
	if err := ensureContainerd(ctx); err != nil {
		return nil, err
	}
	dir := filepath.Join(dataDir, "containerd")
	address := filepath.Join(dir, "containerd.sock")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dataDir, "containerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	log.WithFields(log.Fields{"socket": address, "log": logf.Name()}).Info("starting a private containerd")
	d, err := containerd.Start(ctx, dir, address, logf)
	if err != nil {
		return nil, fmt.Errorf("%w (see %s)", err, logf.Name())
	}
	return d, nil
}

// stopContainerd removes every container of the private containerd d and
// their networks, then stops it and drains what outlived it. The pods stay
// in etcd: the next `minik8s up` starts them again.
func stopContainerd(d *containerd.Daemon, dataDir string) {
	removeContainers(d.Address)
	releasePodNetworks(dataDir)
	log.Info("stopping containerd")
	d.Stop()
	drainContainers(dataDir)
}

// removeContainers stops and removes every container of the private
// containerd, so that nothing of the cluster runs once it is stopped.
func removeContainers(address string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := containerd.New(ctx, address, containerd.Options{})
	if err != nil {
		log.WithError(err).Warn("cannot reach containerd to stop the containers")
		return
	}
	defer rt.Close()
	cs, err := rt.ListContainers(ctx, nil)
	if err != nil {
		log.WithError(err).Warn("listing containers to stop them")
		return
	}
	if len(cs) > 0 {
		log.WithField("containers", len(cs)).Info("stopping the pods' containers")
	}
	for _, c := range cs {
		if err := rt.RemoveContainer(ctx, c.ID); err != nil {
			log.WithError(err).WithField("container", c.ID).Warn("removing container")
		}
	}
}

// releasePodNetworks tears down the pod networks of every kubelet whose
// root is under dataDir (this node's and, by default, the extra nodes'
// of the README), once their containers are gone: no pod namespace or
// address outlives `minik8s up`.
func releasePodNetworks(dataDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dirs, _ := filepath.Glob(filepath.Join(dataDir, "kubelet", "*", kubelet.NetworkStateDir))
	for _, dir := range dirs {
		if err := network.ReleaseAll(ctx, dir, ""); err != nil {
			log.WithError(err).WithField("dir", dir).Warn("releasing the pods' networks")
		}
	}
}

// drainContainers removes the containers that outlived containerd. The
// kubelets of extra nodes share this containerd (see the README) and
// restart the containers removeContainers took from them for as long as
// containerd answers; the ones they start before it stops keep running
// under their shims once it is gone. A containerd on the same dir but on a
// socket no kubelet knows takes them back (it reconnects to live shims)
// and removes them, with nobody able to start more.
func drainContainers(dataDir string) {
	dir := filepath.Join(dataDir, "containerd")
	tasks, _ := filepath.Glob(filepath.Join(dir, "state", "io.containerd.runtime.v2.task", "*", "*"))
	if len(tasks) == 0 {
		return
	}
	// Read now: containerd removes the bundles of the shims it stops.
	bundles := make([]taskBundle, 0, len(tasks))
	for _, t := range tasks {
		bundles = append(bundles, readBundle(t))
	}
	// Last, once the drain is over and the shims are gone.
	defer func() {
		for _, b := range bundles {
			removeAbortedCreate(b)
		}
	}()
	log.WithField("containers", len(tasks)).Info("removing the containers other nodes started while containerd stopped")
	logf, err := os.OpenFile(filepath.Join(dataDir, "containerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		log.WithError(err).Warn("cannot remove the containers left")
		return
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := containerd.Start(ctx, dir, filepath.Join(dir, "drain.sock"), logf)
	if err != nil {
		log.WithError(err).Warn("cannot remove the containers left")
		return
	}
	removeContainers(d.Address)
	// What is left is shims of containers containerd does not know:
	// containerd stopped in the middle of starting them. Either runc
	// create was killed midway (see removeAbortedCreate; containerd 1.6
	// keeps such a shim, 1.7 shuts it down on restart, containerd#6860),
	// or it completed and the container's record went with the failed
	// create, leaving runc init waiting under its shim.
	idle, _ := filepath.Glob(filepath.Join(dir, "state", "io.containerd.runtime.v2.task", "*", "*"))
	for _, b := range idle {
		shutdownOrphanShim(ctx, b)
	}
	d.Stop()
}

// shutdownOrphanShim stops the shim of a task bundle, removing the
// container it still holds first; containerd then removes the bundle.
func shutdownOrphanShim(ctx context.Context, bundle string) {
	id := filepath.Base(bundle)
	logger := log.WithField("container", id)
	addr, err := os.ReadFile(filepath.Join(bundle, "address"))
	if err != nil {
		logger.WithError(err).Warn("shim left without its address")
		return
	}
	conn, err := net.DialTimeout("unix", strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://"), 5*time.Second)
	if err != nil {
		return // gone already
	}
	c := ttrpc.NewClient(conn)
	defer c.Close()
	shim := shimapi.NewTaskClient(c)
	if pids, err := shim.Pids(ctx, &shimapi.PidsRequest{ID: id}); err == nil && len(pids.Processes) > 0 {
		// A container no containerd knows of (the create of a kubelet of
		// another node raced containerd's stop, and its record is gone):
		// nobody could start or stop it any more. The shim kills it and
		// deletes it (runc's state and cgroups, the rootfs mount).
		logger.WithField("pids", len(pids.Processes)).Info("removing a container that outlived containerd")
		if _, err := shim.Kill(ctx, &shimapi.KillRequest{ID: id, Signal: uint32(syscall.SIGKILL), All: true}); err != nil {
			logger.WithError(err).Warn("killing a container that outlived containerd")
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _ = shim.Wait(wctx, &shimapi.WaitRequest{ID: id})
		cancel()
		if _, err := shim.Delete(ctx, &shimapi.DeleteRequest{ID: id}); err != nil {
			logger.WithError(err).Warn("deleting a container that outlived containerd")
		}
	}
	logger.Info("stopping a shim without container")
	// The shim exits before it answers: the error says nothing.
	_, _ = shim.Shutdown(ctx, &shimapi.ShutdownRequest{ID: id, Now: true})
}
