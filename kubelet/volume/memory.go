package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// An emptyDir of medium Memory is a tmpfs of its own, its size the
// volume's sizeLimit (the kernel's default, half the node's memory,
// without one), as Kubernetes mounts it. Its pages count against the
// memory of whoever writes them.

// mountMemory makes dir a tmpfs of at most size bytes (0: the kernel's
// default), unless it is one already (a kubelet that restarted).
func mountMemory(dir string, size int64) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	opts := "mode=0777"
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting a tmpfs at %s: %w", dir, err)
	}
	return nil
}

// isMountPoint says whether dir is mounted on (its device differs from its
// parent's).
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// RemovePodDir removes a pod's dir, unmounting its sub path mounts and
// memory volumes first (removing files below a mount would remove what is
// mounted there).
func RemovePodDir(podDir string) error {
	if err := unmountSubPaths(podDir); err != nil {
		return err
	}
	dirs, _ := filepath.Glob(filepath.Join(Dir(podDir), "empty-dir", "*"))
	for _, d := range dirs {
		if mounted, err := isMountPoint(d); err == nil && mounted {
			if err := unix.Unmount(d, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("unmounting %s: %w", d, err)
			}
		}
	}
	return os.RemoveAll(podDir)
}
