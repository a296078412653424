package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"minik8s/pkg/errdefs"
)

// A volume mount's subPath mounts a part of the volume, as Kubernetes'
// kubelet does it: a container that can write the volume can put a
// symlink there (`ln -s / x`), so the sub path is resolved once, checked
// to stay inside the volume, then opened component by component without
// following any symlink (a swap after the check fails instead of leading
// out), and what was opened is bind-mounted, through its descriptor, on a
// path of the pod's own; the container's mount names that path, never the
// sub path.

// subPathsDir holds a pod's sub path mounts: VOLUME/CONTAINER/INDEX.
func subPathsDir(podDir string) string { return filepath.Join(podDir, "volume-subpaths") }

// BindSubPath mounts sub, a relative path inside the volume at base (made
// as a directory when it does not exist, as Kubernetes does), on the pod's
// path for mount index of container, and returns that path.
func BindSubPath(podDir, volume, container string, index int, base, sub string) (string, error) {
	if sub == "" || filepath.IsAbs(sub) || hasElem(sub, "..") {
		return "", errdefs.Invalid("subPath", "%q must be a relative path inside the volume, without ..", sub)
	}
	rel, err := resolveInside(base, sub)
	if err != nil {
		return "", err
	}
	fd, err := openInside(base, rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	target := filepath.Join(subPathsDir(podDir), volume, container, strconv.Itoa(index))
	if err := unmount(target); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", err
	}
	// The mount point is of the kind of what is mounted on it.
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.MkdirAll(target, 0o750)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640); err == nil {
			f.Close()
		}
	}
	if err != nil {
		return "", err
	}
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), target, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind-mounting subPath %q of volume %q: %w", sub, volume, err)
	}
	return target, nil
}

func hasElem(path, elem string) bool {
	for _, p := range strings.Split(path, "/") {
		if p == elem {
			return true
		}
	}
	return false
}

// resolveInside resolves sub's symlinks under base and returns the result
// relative to base, an error if it leads out of it. What does not exist
// is made, as directories, under the resolved part that does, following
// no symlink.
func resolveInside(base, sub string) (string, error) {
	base, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", err
	}
	parts := strings.Split(filepath.Clean(sub), "/")
	n := len(parts)
	for n > 0 {
		if _, err := os.Lstat(filepath.Join(base, filepath.Join(parts[:n]...))); err == nil {
			break
		}
		n--
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(base, filepath.Join(parts[:n]...)))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(base, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", errdefs.Invalid("subPath", "%q leads out of its volume (to %s)", sub, resolved)
	}
	if n == len(parts) {
		return rel, nil
	}
	fd, err := openInside(base, rel)
	if err != nil {
		return "", err
	}
	defer func() { unix.Close(fd) }()
	for _, part := range parts[n:] {
		if err := unix.Mkdirat(fd, part, 0o750); err != nil && !errors.Is(err, unix.EEXIST) {
			return "", fmt.Errorf("making subPath %q: %w", sub, err)
		}
		next, err := unix.Openat(fd, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("making subPath %q: %w", sub, err)
		}
		unix.Close(fd)
		fd = next
		rel = filepath.Join(rel, part)
	}
	return rel, nil
}

// openInside opens rel under base one component at a time, following no
// symlink: O_PATH, for bind-mounting.
func openInside(base, rel string) (int, error) {
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	for _, part := range strings.Split(rel, "/") {
		next, err := unix.Openat(fd, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("opening subPath component %q: %w", part, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, errdefs.Invalid("subPath", "%q changed into a symlink while it was opened", rel)
		}
		fd = next
	}
	return fd, nil
}

// unmount unmounts target if something is mounted there.
func unmount(target string) error {
	err := unix.Unmount(target, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmounting %s: %w", target, err)
}

// unmountSubPaths unmounts every sub path mount of the pod: removing the
// pod's dir must never reach through one into a volume (or the host).
func unmountSubPaths(podDir string) error {
	targets, _ := filepath.Glob(filepath.Join(subPathsDir(podDir), "*", "*", "*"))
	for _, t := range targets {
		if err := unmount(t); err != nil {
			return err
		}
	}
	return nil
}
