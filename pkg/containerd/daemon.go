// Package containerd starts a containerd daemon private to minik8s: its own
// root, state and socket under one directory, so it never touches the
// machine's own containerd (if there is one).
package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Binary is the Debian package's daemon.
const Binary = "/usr/bin/containerd"

// Daemon is a running private containerd.
type Daemon struct {
	Dir     string
	Address string

	cmd  *exec.Cmd
	done chan error
}

// Config writes the daemon's configuration: root, state and sockets under
// dir, and only the plugins minik8s needs.
func Config(dir, address string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  address = ""
  level = "warn"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), address, address+".ttrpc", filepath.Join(dir, "opt"))
}

// Start starts containerd with its files in dir and its socket at address
// (unix socket paths are limited to 108 bytes), writing its output to log,
// and waits until the socket answers. The daemon runs in its own process
// group so a Ctrl-C meant for minik8s reaches it only through Stop.
func Start(ctx context.Context, dir, address string, log io.Writer) (*Daemon, error) {
	if len(address) > 100 {
		return nil, fmt.Errorf("containerd socket path %q is too long for a unix socket", address)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("containerd dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(address), 0o711); err != nil {
		return nil, fmt.Errorf("containerd socket dir: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(Config(dir, address)), 0o600); err != nil {
		return nil, err
	}
	d := &Daemon{Dir: dir, Address: address, done: make(chan error, 1)}
	d.cmd = exec.Command(Binary, "--config", cfgPath)
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting containerd: %w", err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("unix", address, time.Second); err == nil {
			c.Close()
			return d, nil
		}
		select {
		case err := <-d.done:
			d.done <- err
			return nil, fmt.Errorf("containerd exited while starting: %v", err)
		case <-ctx.Done():
			d.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Stop()
			return nil, errors.New("containerd did not open its socket within 30s")
		}
	}
}

// Stop asks the daemon to stop and waits for it (killing it after 15s).
// Containers keep running under their shims; the next daemon on the same
// dir finds them again.
func (d *Daemon) Stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
	}
}
