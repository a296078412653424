// Package netns creates, enters and removes network namespaces kept by a
// bind mount on a file, as `ip netns` and CNI runtimes keep them: the
// namespace lives as long as the mount, with or without processes in it.
package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// New creates a network namespace kept at path (its directory is made if
// needed). The namespace has only a loopback device, down.
func New(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("network namespace file %s: %w", path, err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread that unshared ends with this goroutine
		// rather than run other goroutines in the new namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind mount of %s on %s: %w", self, path, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return fmt.Errorf("creating network namespace %s: %w", path, err)
	}
	return nil
}

// Remove ends the namespace kept at path (once no process is in it) and
// removes the file; a path that is gone already is no error.
func Remove(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Is reports whether path holds a network namespace.
func Is(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// Do runs fn on a thread in the namespace at path: the sockets fn opens
// and the processes it starts belong to that namespace. path "" runs fn
// where the caller is.
func Do(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, so no other
		// goroutine ever runs in the namespace by chance.
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("entering network namespace %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
