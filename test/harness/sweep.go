package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Every test binary that uses the harness owns one run dir,
// /tmp/minik8s-test-<token>, holding everything it starts: containerd's
// root, state and socket, and (through TMPDIR) t.TempDir's dirs. The file
// "owner" in it names the binary (pid and start time, for people) and
// stays flock'ed by it until it exits: the kernel drops the lock however
// the binary dies, so "the lock is free" means "the owner is dead" with no
// pid-reuse guess, and a sweeper holds the lock while it sweeps.
const (
	runDirParent = "/tmp"
	RunDirPrefix = "minik8s-test-"
	ownerFile    = "owner"
)

var run struct {
	once sync.Once
	mu   sync.Mutex
	dir  string
	lock *os.File // held open (and locked) for the binary's life
	err  error
}

// RunDir sweeps what dead test binaries left, then creates this binary's
// run dir (once) and returns it.
func RunDir() string {
	run.once.Do(func() {
		SweepStale()
		dir, err := os.MkdirTemp(runDirParent, RunDirPrefix+"*")
		if err != nil {
			run.err = err
			return
		}
		f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_CREATE|os.O_RDWR, 0o644)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		}
		if err != nil {
			run.err = fmt.Errorf("locking the run dir %s: %w", dir, err)
			return
		}
		fmt.Fprintf(f, "%d %d %s\n", os.Getpid(), ProcStart(os.Getpid()), strings.Join(os.Args, " "))
		run.mu.Lock()
		run.dir, run.lock = dir, f
		run.mu.Unlock()
	})
	if run.err != nil {
		panic(fmt.Sprintf("harness: %v", run.err))
	}
	return run.dir
}

func runDirIfAny() string {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.dir
}

// releaseRunDir forgets the (removed) run dir and drops its lock.
func releaseRunDir() {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.lock != nil {
		run.lock.Close()
	}
	run.dir, run.lock = "", nil
}

// RunToken is the random part of this binary's run dir. Parts of the
// harness whose resources live outside the run dir (network namespaces,
// veths, nftables tables) put it in their names, so that a sweeper can
// tell which dead binary they belong to. Names with a short limit (an
// interface name has 15 bytes) should use it whole: it is up to 10 digits.
func RunToken() string {
	return strings.TrimPrefix(filepath.Base(RunDir()), RunDirPrefix)
}

// A Sweeper removes one kind of thing a test binary left behind, given its
// run dir (whose owner is dead, or is the caller at its very end). It
// returns a description of each thing it had to remove.
//
// The containerd parts are swept by the generic ones below (runc
// containers, processes, mounts). Later parts plug in with RegisterSweeper
// (or by adding to sweepers):
//   - NATS: its server's store dir (-sd) and config live in the run dir,
//     so the process sweeper already kills it.
//   - network namespaces: named with RunToken; sweepNetns removes them.
//   - veths, nftables tables: named with RunToken; a sweeper lists them
//     (`ip -o link`, `nft list tables`) and deletes those of the token.
type Sweeper func(dir string) (removed []string, err error)

type namedSweeper struct {
	kind string
	fn   Sweeper
}

var sweepers = struct {
	mu   sync.Mutex
	list []namedSweeper
}{list: []namedSweeper{
	// runc first: its containers' processes reference nothing in the run
	// dir, only their shims do, and a shim killed first loses them.
	{"runc containers", SweepRuncContainers},
	{"processes", sweepProcesses},
	{"network namespaces", sweepNetns},
	{"mounts", sweepMounts},
}}

// RegisterSweeper adds a kind of leftover to sweep; sweepers run in the
// order registered, mounts last.
func RegisterSweeper(kind string, fn Sweeper) {
	sweepers.mu.Lock()
	defer sweepers.mu.Unlock()
	n := len(sweepers.list)
	sweepers.list = append(sweepers.list[:n-1:n-1], namedSweeper{kind, fn}, sweepers.list[n-1])
}

// SweepDir runs every sweeper on dir and removes it; it returns what it
// found still running or mounted, and what it could not remove.
func SweepDir(dir string) []string {
	sweepers.mu.Lock()
	list := append([]namedSweeper(nil), sweepers.list...)
	sweepers.mu.Unlock()
	var left []string
	for _, s := range list {
		removed, err := s.fn(dir)
		left = append(left, removed...)
		if err != nil {
			left = append(left, fmt.Sprintf("%s of %s: %v", s.kind, dir, err))
		}
	}
	if m := MountsUnder(dir); len(m) > 0 {
		// Never delete through a mount.
		return append(left, fmt.Sprintf("mounts still under %s: %v", dir, m))
	}
	if err := os.RemoveAll(dir); err != nil {
		left = append(left, fmt.Sprintf("removing %s: %v", dir, err))
	}
	return left
}

// SweepStale sweeps and removes the run dirs of test binaries that are
// gone. A dir whose owner still holds its lock belongs to a running binary
// (another package's, or another person's) and is never touched.
func SweepStale() {
	entries, err := os.ReadDir(runDirParent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), RunDirPrefix) {
			continue
		}
		dir := filepath.Join(runDirParent, e.Name())
		unlock, ok := claim(dir)
		if !ok {
			continue
		}
		left := SweepDir(dir)
		unlock()
		if len(left) > 0 {
			stderrf("swept the run dir of a dead test binary, %s:", dir)
			for _, l := range left {
				stderrf("  %s", l)
			}
		}
	}
}

// claim locks the owner file of a dir whose owner is dead. A dir without
// an owner file is being created, unless it is older than a minute.
func claim(dir string) (unlock func(), ok bool) {
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		st, err := os.Stat(dir)
		if err != nil || time.Since(st.ModTime()) < time.Minute {
			return nil, false
		}
		return func() {}, true
	}
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

// sweepProcesses kills every process that refers to dir: containerd (its
// --config), its shims (their -address and working dir) with their
// children, and anything else started on the dir (NATS, later).
func sweepProcesses(dir string) ([]string, error) {
	procs := ProcsReferring(dir)
	var found []string
	for _, p := range procs {
		found = append(found, fmt.Sprintf("process %d: %s", p.PID, p.Cmdline))
	}
	return found, KillProcs(procs)
}

// runcRoots are where containerd's runc shims keep runc's state (one dir
// per containerd namespace below): outside the run dir, shared by every
// containerd of the machine.
var runcRoots = []string{"/run/containerd/runc"}

// SweepRuncContainers deletes (killing their processes, removing their
// cgroups and state) the runc containers whose bundle or rootfs is in dir.
func SweepRuncContainers(dir string) ([]string, error) {
	var found []string
	var errs []error
	for _, base := range runcRoots {
		states, _ := filepath.Glob(filepath.Join(base, "*", "*", "state.json"))
		for _, st := range states {
			data, err := os.ReadFile(st)
			if err != nil || !refersTo(string(data), dir) {
				continue
			}
			root, id := filepath.Dir(filepath.Dir(st)), filepath.Base(filepath.Dir(st))
			found = append(found, fmt.Sprintf("runc container %s (root %s)", id, root))
			out, err := exec.Command("runc", "--root", root, "delete", "--force", id).CombinedOutput()
			if err != nil {
				errs = append(errs, fmt.Errorf("runc delete %s: %v: %s", id, err, bytes.TrimSpace(out)))
			}
		}
	}
	return found, errors.Join(errs...)
}

// NetnsDir holds the bind mounts of named network namespaces (ip netns).
const NetnsDir = "/run/netns"

// sweepNetns removes the named network namespaces of the run dir's
// binary: those whose name carries its token.
func sweepNetns(dir string) ([]string, error) {
	token := strings.TrimPrefix(filepath.Base(dir), RunDirPrefix)
	if token == "" || token == filepath.Base(dir) {
		return nil, nil
	}
	entries, _ := os.ReadDir(NetnsDir)
	var found []string
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), RunDirPrefix+token+"-") && !strings.HasSuffix(e.Name(), "-"+token) {
			continue
		}
		p := filepath.Join(NetnsDir, e.Name())
		found = append(found, "network namespace "+e.Name())
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return found, errors.Join(errs...)
}

// sweepMounts unmounts everything mounted under dir, deepest first.
func sweepMounts(dir string) ([]string, error) {
	var found []string
	var errs []error
	for _, m := range MountsUnder(dir) {
		found = append(found, "mount "+m)
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return found, errors.Join(errs...)
}
