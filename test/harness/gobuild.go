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
	builds.mu.Lock()
	if builds.done == nil {
		builds.done = map[string]*build{}
	}
	b := builds.done[pkg]
	if b == nil {
		b = &build{}
		builds.done[pkg] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			b.err = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		name := filepath.Base(pkg)
		dir, err := os.MkdirTemp("", name)
		if err != nil {
			b.err = err
			return
		}
		path := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-o", path, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = errors.New("go build " + pkg + ": " + err.Error() + "\n" + string(out))
			return
		}
		b.path = path
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
