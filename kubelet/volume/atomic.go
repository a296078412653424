package volume

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"minik8s/pkg/errdefs"
)

// dataLink is the symlink, in a volume dir, to the hidden dir that holds
// the current files; every file name is a symlink through it.
const dataLink = "..data"

// WriteFiles makes dir hold exactly files (name -> content, each with
// mode), as Kubernetes' AtomicWriter does: the files go into a fresh hidden
// dir, the symlink ..data is swapped to it by a rename, and each name is a
// symlink through ..data. A reader sees the old set or the new, never a
// mix; and dir itself stays, so a container that has it bind-mounted sees
// the new files (replacing dir would leave the container the old one).
func WriteFiles(dir string, files map[string][]byte, mode os.FileMode) error {
	return writeFiles(dir, files, func(string) os.FileMode { return mode })
}

// writeFiles is WriteFiles with a mode per file. A name may be a path
// ("conf/app.yaml", as an item's path may be): its directories are made
// in the data dir, and the top one is the symlink through ..data.
func writeFiles(dir string, files map[string][]byte, modeOf func(name string) os.FileMode) error {
	names := make([]string, 0, len(files))
	tops := map[string]bool{}
	for name := range files {
		if err := checkPath(name); err != nil {
			return err
		}
		names = append(names, name)
		top, _, _ := strings.Cut(name, "/")
		tops[top] = true
	}
	sort.Strings(names)
	if unchanged(dir, names, files, modeOf) {
		// Written again (a refresh) with nothing new: the files stay.
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05")+".")
	if err != nil {
		return err
	}
	if err := fill(data, names, files, modeOf); err != nil {
		os.RemoveAll(data)
		return err
	}
	if err := swapSymlink(filepath.Join(dir, dataLink), filepath.Base(data)); err != nil {
		os.RemoveAll(data)
		return err
	}
	for top := range tops {
		if err := swapSymlink(filepath.Join(dir, top), filepath.Join(dataLink, top)); err != nil {
			return err
		}
	}
	// What is left of earlier writes: names no longer there, the previous
	// data dir, and the debris of a write that was interrupted.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if tops[n] || n == dataLink || n == filepath.Base(data) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// unchanged says whether dir's current files are exactly these, with
// these modes.
func unchanged(dir string, names []string, files map[string][]byte, modeOf func(string) os.FileMode) bool {
	cur, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		return false
	}
	data := filepath.Join(dir, cur)
	count := 0
	if err := filepath.WalkDir(data, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			count++
		}
		return err
	}); err != nil || count != len(names) {
		return false
	}
	for _, name := range names {
		path := filepath.Join(data, name)
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != modeOf(name).Perm() || st.Size() != int64(len(files[name])) {
			return false
		}
		top, _, _ := strings.Cut(name, "/")
		if link, err := os.Readlink(filepath.Join(dir, top)); err != nil || link != filepath.Join(dataLink, top) {
			return false
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, files[name]) {
			return false
		}
	}
	return true
}

// fill writes the files into the fresh data dir.
func fill(data string, names []string, files map[string][]byte, modeOf func(string) os.FileMode) error {
	for _, name := range names {
		path := filepath.Join(data, name)
		mode := modeOf(name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return errdefs.Invalid("path", "%q: %v (a file and a directory of one name?)", name, err)
		}
		if err := os.WriteFile(path, files[name], mode); err != nil {
			return err
		}
		// The umask must not narrow the mode asked for.
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
	}
	return filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(path, 0o755)
		}
		return err
	})
}

// swapSymlink makes path a symlink to target in one rename.
func swapSymlink(path, target string) error {
	if cur, err := os.Readlink(path); err == nil && cur == target {
		return nil
	}
	// Names starting with ".." are never file names (checkFileName).
	tmp := filepath.Join(filepath.Dir(path), "..link-"+filepath.Base(path))
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// checkPath refuses an item's path that is absolute, has a ".." or an
// empty element, or starts with "..", which Kubernetes keeps for the
// writer's own files; a path of several elements is files in directories,
// as in Kubernetes.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "..") || strings.Contains(p, "\x00") {
		return errdefs.Invalid("path", "%q must be a relative path not starting with '..'", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == "" || e == "." || e == ".." {
			return errdefs.Invalid("path", "%q must be a relative path without '..', '.' or empty elements", p)
		}
	}
	return nil
}

// checkFileName refuses keys that are no plain file name, and those
// starting with "..", which Kubernetes keeps for the writer's own files.
func checkFileName(k string) error {
	if k == "" || strings.HasPrefix(k, "..") || k == "." || strings.ContainsAny(k, "/\x00") {
		return errdefs.Invalid("data", "key %q is not a valid file name", k)
	}
	return nil
}
