package cluster

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	log "github.com/sirupsen/logrus"
)

// runcRoot is where the runc shim keeps runc's state, one dir per
// containerd namespace (containerd's default, which Config keeps). Every
// containerd of the machine shares it: only the IDs of this cluster's
// tasks are ever looked at.
var runcRoot = "/run/containerd/runc"

// cgroupRoot is where the cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// taskBundle is what removeAbortedCreate needs of a task bundle, read
// before containerd and the shim remove the bundle.
type taskBundle struct {
	ns, id string
	// cgroupsPath is the container's cgroup, from its OCI spec.
	cgroupsPath string
	// shimAddress is the socket of the bundle's shim.
	shimAddress string
}

// readBundle reads a task bundle (state/io.containerd.runtime.v2.task/NS/ID).
func readBundle(dir string) taskBundle {
	b := taskBundle{ns: filepath.Base(filepath.Dir(dir)), id: filepath.Base(dir)}
	var spec struct {
		Linux *struct {
			CgroupsPath string `json:"cgroupsPath"`
		} `json:"linux"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil &&
		json.Unmarshal(data, &spec) == nil && spec.Linux != nil {
		b.cgroupsPath = spec.Linux.CgroupsPath
	}
	if data, err := os.ReadFile(filepath.Join(dir, "address")); err == nil {
		b.shimAddress = strings.TrimPrefix(strings.TrimSpace(string(data)), "unix://")
	}
	return b
}

// removeAbortedCreate removes what a `runc create` that was cut short
// leaves: its state dir holding only exec.fifo (runc writes state.json
// when the create completes) and the container's empty cgroups. Nothing
// else removes them: runc delete knows a container only by its state.json,
// and the cgroups not even then. The shim runs runc create with the
// context of containerd's request, which ends when containerd stops, so
// stopping containerd while a kubelet of another node starts a container
// on it kills runc create midway; the shim that remains has no container,
// and shutdownOrphanShim stops it.
//
// It runs once the bundle's shim is gone, so that no runc create of the
// container can still be under way, and touches only a container that
// runc never finished creating.
func removeAbortedCreate(b taskBundle) {
	logger := log.WithField("container", b.id)
	if b.shimAddress != "" && !waitShimGone(b.shimAddress, 5*time.Second) {
		logger.WithField("shim", b.shimAddress).Warn("shim still running, leaving its runc state")
		return
	}
	dir := filepath.Join(runcRoot, b.ns, b.id)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); !errors.Is(err, fs.ErrNotExist) {
		return // created (containerd removes it with its task), or unreadable
	}
	if _, err := os.Stat(dir); err == nil {
		logger.Info("removing the runc state of a container whose creation was cut short")
		if err := os.RemoveAll(dir); err != nil {
			logger.WithError(err).Warn("removing runc state")
		}
	}
	path := b.cgroupsPath
	if path == "" || strings.Contains(path, ":") { // none, or a systemd slice
		return
	}
	for _, cg := range cgroupDirs(path) {
		if err := syscall.Rmdir(cg); err != nil && !errors.Is(err, fs.ErrNotExist) {
			logger.WithError(err).WithField("cgroup", cg).Warn("removing the cgroup of a container whose creation was cut short")
		}
	}
}

// cgroupDirs are the dirs of cgroup path: in the unified hierarchy (v2)
// and in each v1 hierarchy.
func cgroupDirs(path string) []string {
	dirs := []string{filepath.Join(cgroupRoot, path)}
	hs, _ := os.ReadDir(cgroupRoot)
	for _, h := range hs {
		if h.IsDir() {
			dirs = append(dirs, filepath.Join(cgroupRoot, h.Name(), path))
		}
	}
	return dirs
}

// waitShimGone waits up to timeout for the shim listening on address to
// stop answering.
func waitShimGone(address string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("unix", address, time.Second)
		if err != nil {
			return true
		}
		conn.Close()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
