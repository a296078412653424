package harness

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var builds struct {
	mu   sync.Mutex
	done map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// FuncserverBinary builds cmd/funcserver statically, once per test process,
// for the function runtime image.
func FuncserverBinary(t testing.TB) string { return GoBinary(t, "funcserver") }

// GoBinary builds cmd/NAME statically, once per test process.
func GoBinary(t testing.TB, name string) string {
	t.Helper()
	return GoProgram(t, "./cmd/"+name)
}

// GoProgram builds the main package pkg (a path from the module's root,
// "./test/incluster") statically, once per test process.
func GoProgram(t testing.TB, pkg string) string {
	t.Helper()
	return buildOnce(t, pkg, func(root string) (string, error) {
		name := filepath.Base(pkg)
		dir, err := os.MkdirTemp("", name)
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, name)
		return path, goBuild(root, []string{"CGO_ENABLED=0"}, "-trimpath", "-o", path, pkg)
	})
}

// Binaries builds every command (./cmd/...) into one directory, once per
// test process, as `make build` does (funcserver static, for the runtime
// image): minik8s up finds funcserver and the logger beside itself.
func Binaries(t testing.TB) string {
	t.Helper()
	return buildOnce(t, "./cmd/...", func(root string) (string, error) {
		dir, err := os.MkdirTemp("", "bin")
		if err != nil {
			return "", err
		}
		if err := goBuild(root, nil, "-o", dir+"/", "./cmd/..."); err != nil {
			return "", err
		}
		return dir, goBuild(root, []string{"CGO_ENABLED=0"}, "-o", filepath.Join(dir, "funcserver"), "./cmd/funcserver")
	})
}

// buildOnce runs mk in the module's root once per test process and
// key, and returns what it made.
func buildOnce(t testing.TB, key string, mk func(root string) (string, error)) string {
	t.Helper()
	builds.mu.Lock()
	if builds.done == nil {
		builds.done = map[string]*build{}
	}
	b := builds.done[key]
	if b == nil {
		b = &build{}
		builds.done[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			b.err = err
			return
		}
		b.path, b.err = mk(filepath.Dir(strings.TrimSpace(string(out))))
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// goBuild runs `go build args…` in root with env added.
func goBuild(root string, env []string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New("go build " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(out))
	}
	return nil
}
