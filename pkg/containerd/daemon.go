// A private containerd daemon: its own root, state and socket under one
// directory, so it never touches the machine's own containerd (if there is
// one).

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

	"minik8s/pkg/subprocess"
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

// Option changes how Start runs the daemon.
type Option func(*options)

type options struct {
	pdeathsig syscall.Signal
}

// WithPdeathsig has the kernel send sig to the daemon when the process that
// started it dies, even by SIGKILL, so that a killed test binary does not
// leave its containerd behind. (Its shims survive it: they are reparented.)
func WithPdeathsig(sig syscall.Signal) Option {
	return func(o *options) { o.pdeathsig = sig }
}

// Start starts containerd with its files in dir and its socket at address
// (unix socket paths are limited to 108 bytes), writing its output to log,
// and waits until the socket answers. The daemon runs in its own process
// group so a Ctrl-C meant for minik8s reaches it only through Stop.
func Start(ctx context.Context, dir, address string, log io.Writer, opts ...Option) (*Daemon, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
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
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: o.pdeathsig}
	// Forked from a thread kept for the daemon's life: the parent death
	// signal fires when the forking thread ends.
	wait, err := subprocess.Start(d.cmd)
	if err != nil {
		return nil, fmt.Errorf("starting containerd: %w", err)
	}
	go func() { d.done <- wait() }()
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

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// Exited reports whether the daemon has exited, and how.
func (d *Daemon) Exited() (bool, error) {
	select {
	case err := <-d.done:
		d.done <- err
		return true, err
	default:
		return false, nil
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
		d.done <- <-d.done
	}
}
