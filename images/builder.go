// Package images builds the project's container images without a
// registry: a Debian root filesystem from Debian's packages (debootstrap),
// cached on the machine, plus extra files in a second layer, written as an
// image archive that containerd imports.
package images

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/wait"
)

// DefaultCacheDir keeps root filesystems and built images between builds.
const DefaultCacheDir = "/var/cache/minik8s"

// Rootfs is a Debian root filesystem made by debootstrap.
type Rootfs struct {
	// Suite is the Debian release; empty takes the machine's from its apt
	// sources (or debootstrap's default release).
	Suite   string
	Variant string
	Include []string
}

// File is one extra file of an image: the contents of Source on the
// build machine, or Data.
type File struct {
	Source string
	Data   []byte
	// Path inside the image, absolute.
	Path string
	Mode os.FileMode
}

// Spec describes an image.
type Spec struct {
	// Name is the image reference, e.g. "minik8s/python-runtime:latest".
	Name       string
	Rootfs     Rootfs
	Files      []File
	Env        []string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
}

// PythonRuntimeName is the image function pods run in.
const PythonRuntimeName = "minik8s/python-runtime:latest"

// PythonRuntime is Debian minbase with python3. Extra files (the function
// runtime, for one) go into a layer of their own.
func PythonRuntime(extra ...File) Spec {
	return Spec{
		Name:   PythonRuntimeName,
		Rootfs: Rootfs{Variant: "minbase", Include: []string{"python3"}},
		Files:  extra,
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"LANG=C.UTF-8",
			"PYTHONUNBUFFERED=1",
		},
		Cmd: []string{"python3"},
	}
}

// ErrNoDebootstrap: the root filesystem is not cached and debootstrap is
// not installed.
var ErrNoDebootstrap = errors.New("debootstrap is not installed")

// Builder builds images into a cache dir.
type Builder struct {
	// CacheDir holds rootfs/ and images/; DefaultCacheDir when empty.
	CacheDir string
	// Mirror overrides the Debian mirror taken from the apt sources.
	Mirror string
	// SourcesDir is where apt's sources are read; /etc/apt when empty.
	SourcesDir string
}

// Build returns the path of an image archive for spec, building what the
// cache does not hold yet. Concurrent builds (of several test packages,
// say) wait for each other through a lock file.
func (b *Builder) Build(ctx context.Context, spec Spec) (string, error) {
	if b.CacheDir == "" {
		b.CacheDir = DefaultCacheDir
	}
	if _, err := name.ParseReference(spec.Name); err != nil {
		return "", fmt.Errorf("image name %q: %w", spec.Name, err)
	}
	for _, d := range []string{"rootfs", "images"} {
		if err := os.MkdirAll(filepath.Join(b.CacheDir, d), 0o755); err != nil {
			return "", fmt.Errorf("image cache: %w", err)
		}
	}
	unlock, err := lockFile(ctx, filepath.Join(b.CacheDir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()

	rootfsTar, err := b.rootfs(ctx, spec.Rootfs)
	if err != nil {
		return "", err
	}
	key, err := imageKey(spec, rootfsTar)
	if err != nil {
		return "", err
	}
	out := filepath.Join(b.CacheDir, "images", strings.NewReplacer("/", "_", ":", "_").Replace(spec.Name)+"-"+key[:16]+".tar")
	if _, err := os.Stat(out); err == nil {
		now := time.Now()
		_ = os.Chtimes(out, now, now) // in use: keep it from prune
		return out, nil
	}
	start := time.Now()
	if err := writeImage(spec, rootfsTar, out); err != nil {
		return "", err
	}
	log.WithFields(log.Fields{"image": spec.Name, "file": out, "took": time.Since(start).Round(time.Millisecond)}).Info("image built")
	b.prune(spec.Name, out)
	return out, nil
}

// prune removes archives of the same image not used for a day. Recent
// ones stay: builds of one name with other extra files (with and without
// the function runtime, say) may be in use by another process.
func (b *Builder) prune(imageName, keep string) {
	prefix := strings.NewReplacer("/", "_", ":", "_").Replace(imageName) + "-"
	matches, _ := filepath.Glob(filepath.Join(b.CacheDir, "images", prefix+"*.tar"))
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && m != keep && time.Since(st.ModTime()) > 24*time.Hour {
			_ = os.Remove(m)
		}
	}
}

// imageKey identifies a build by its inputs.
func imageKey(spec Spec, rootfsTar string) (string, error) {
	h := sha256.New()
	st, err := os.Stat(rootfsTar)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "rootfs %s %d %d\n", rootfsTar, st.Size(), st.ModTime().UnixNano())
	meta := spec
	meta.Files = nil
	j, _ := json.Marshal(meta)
	h.Write(j)
	for _, f := range spec.Files {
		data, err := f.contents()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\nfile %s %o %d\n", f.Path, f.Mode, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (f File) contents() ([]byte, error) {
	if f.Source == "" {
		return f.Data, nil
	}
	data, err := os.ReadFile(f.Source)
	if err != nil {
		return nil, fmt.Errorf("image file %s: %w", f.Path, err)
	}
	return data, nil
}

// writeImage writes a docker-archive image: the rootfs layer, a layer of
// the extra files, and the config.
func writeImage(spec Spec, rootfsTar, out string) error {
	base, err := tarball.LayerFromFile(rootfsTar, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
	if err != nil {
		return fmt.Errorf("rootfs layer: %w", err)
	}
	layers := []v1.Layer{base}
	if len(spec.Files) > 0 {
		l, err := filesLayer(spec.Files)
		if err != nil {
			return err
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return fmt.Errorf("image layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = goruntime.GOARCH
	cf.Created = v1.Time{Time: time.Now().UTC()}
	cf.Config.Env = spec.Env
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Cmd = spec.Cmd
	cf.Config.WorkingDir = spec.WorkingDir
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	tag, err := name.NewTag(spec.Name)
	if err != nil {
		return fmt.Errorf("image name %q: %w", spec.Name, err)
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing image %s: %w", spec.Name, err)
	}
	return os.Rename(tmp, out)
}

// filesLayer makes a layer holding the extra files (and their parent dirs).
func filesLayer(files []File) (v1.Layer, error) {
	tmp, err := os.CreateTemp("", "minik8s-layer-*.tar")
	if err != nil {
		return nil, err
	}
	defer tmp.Close()
	tw := tar.NewWriter(tmp)
	dirs := map[string]bool{}
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		p := strings.TrimPrefix(filepath.Clean("/"+f.Path), "/")
		if p == "" {
			return nil, fmt.Errorf("image file with no path")
		}
		var parents []string
		for d := filepath.Dir(p); d != "." && !dirs[d]; d = filepath.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		data, err := f.contents()
		if err != nil {
			return nil, err
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: int64(mode), Size: int64(len(data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	// The layer reads the file whenever it is opened; read it all now so
	// that the temp file can go.
	data, err := os.ReadFile(tmp.Name())
	os.Remove(tmp.Name())
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(string(data))), nil
	})
}

// lockFile takes an exclusive lock on path, waiting for it while ctx lasts.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("image cache lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("image cache lock: %w", err)
		}
		if !wait.Sleep(ctx, 200*time.Millisecond) {
			f.Close()
			return nil, fmt.Errorf("waiting for the image cache lock %s: %w", path, ctx.Err())
		}
	}
}

// rootfs returns the path of a tar of the root filesystem, running
// debootstrap when the cache does not have it.
func (b *Builder) rootfs(ctx context.Context, r Rootfs) (string, error) {
	mirror, suite := b.aptSource()
	if b.Mirror != "" {
		mirror = b.Mirror
	}
	if r.Suite != "" {
		suite = r.Suite
	}
	variant := r.Variant
	if variant == "" {
		variant = "minbase"
	}
	include := append([]string(nil), r.Include...)
	sort.Strings(include)
	keySuite := suite
	if keySuite == "" {
		keySuite = "default"
	}
	out := filepath.Join(b.CacheDir, "rootfs", fmt.Sprintf("debian-%s-%s-%s.tar", keySuite, variant, strings.Join(include, "+")))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("root filesystem %s is not cached: %w", filepath.Base(out), ErrNoDebootstrap)
	}
	work, err := os.MkdirTemp(filepath.Join(b.CacheDir, "rootfs"), "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	root := filepath.Join(work, "root")
	args := []string{"--variant=" + variant}
	if len(include) > 0 {
		args = append(args, "--include="+strings.Join(include, ","))
	}
	if suite == "" {
		suite = defaultSuite()
	}
	args = append(args, suite, root)
	if mirror != "" {
		args = append(args, mirror)
	}
	start := time.Now()
	log.WithFields(log.Fields{"suite": suite, "variant": variant, "include": include, "mirror": mirror}).Info("debootstrap: building root filesystem (a few minutes, once per machine)")
	if err := run(ctx, filepath.Join(work, "debootstrap.log"), "debootstrap", args...); err != nil {
		return "", err
	}
	trimRootfs(root)
	tmp := out + ".tmp"
	if err := run(ctx, filepath.Join(work, "tar.log"), "tar", "--numeric-owner", "--xattrs", "-C", root, "-cf", tmp, "."); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	log.WithFields(log.Fields{"file": out, "took": time.Since(start).Round(time.Second)}).Info("debootstrap: root filesystem cached")
	return out, nil
}

// trimRootfs drops what a container never needs: downloaded packages,
// package lists, documentation.
func trimRootfs(root string) {
	for _, pattern := range []string{
		"var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*",
		"usr/share/doc/*", "usr/share/man/*", "usr/share/info/*", "var/log/*",
		"dev/*", "proc/*", "sys/*", "run/*", "tmp/*",
	} {
		matches, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, m := range matches {
			_ = os.RemoveAll(m)
		}
	}
}

// run runs a command, its output in logPath; the error carries the tail.
func run(ctx context.Context, logPath, cmd string, args ...string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	c := exec.CommandContext(ctx, cmd, args...)
	c.Stdout, c.Stderr = f, f
	if err := c.Run(); err != nil {
		data, _ := os.ReadFile(logPath)
		tail := string(data)
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return fmt.Errorf("%s %s: %w\n%s", cmd, strings.Join(args, " "), err, tail)
	}
	return nil
}

// defaultSuite is the machine's Debian release, or bookworm.
func defaultSuite() string {
	data, err := os.ReadFile("/etc/os-release")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VERSION_CODENAME="); ok && strings.Trim(v, `"`) != "" {
				return strings.Trim(v, `"`)
			}
		}
	}
	return "bookworm"
}
