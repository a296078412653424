package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"minik8s/pkg/errdefs"
)

// RemoveClaimDir removes dir, the directory of a local-path volume
// released under Delete, from the node's storage dir. The node removes
// only what the provisioner could have made there: a directory (not a
// symlink, which could lead anywhere) named pvc-* right under storageDir,
// by a clean absolute path; whatever else a volume names is refused, and
// stays. Inside it, RemoveAll unlinks symlinks without following them. A
// directory already gone is removed: the deleter runs again after a
// crash between the removal and the volume's deletion.
func RemoveClaimDir(storageDir, dir string) error {
	if !filepath.IsAbs(storageDir) {
		return errdefs.Invalid("storageDir", "%q is not an absolute path", storageDir)
	}
	storageDir = filepath.Clean(storageDir)
	switch {
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		return errdefs.Invalid("path", "%q is not a clean absolute path: refusing to remove it", dir)
	case filepath.Dir(dir) != storageDir:
		return errdefs.Invalid("path", "%q is not in this node's storage dir %s: refusing to remove it", dir, storageDir)
	case !strings.HasPrefix(filepath.Base(dir), "pvc-"):
		return errdefs.Invalid("path", "%q is not named as the local-path provisioner names its directories (pvc-*): refusing to remove it", dir)
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return errdefs.Invalid("path", "%q is a symbolic link: refusing to follow it", dir)
	case !fi.IsDir():
		return errdefs.Invalid("path", "%q is not a directory: refusing to remove it", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the volume's directory: %w", err)
	}
	return nil
}
