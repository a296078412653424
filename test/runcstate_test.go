package test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"syscall"
	"time"
)

// runcRoot is where containerd's runc shim keeps runc's state of the
// containerd namespace minik8s. Every containerd of the machine shares it,
// so a test judges only the IDs its own containerd ran.
const runcRoot = "/run/containerd/runc/minik8s"

// taskIDs collects the IDs of the tasks a containerd ran in the minik8s
// namespace: the bundles of its state dir, sampled while it runs, and the
// shims it started, from its log ("starting signal loop ... path=BUNDLE"),
// which names even a task whose bundle lived shorter than a sample.
type taskIDs struct {
	dataDir string // minik8s up's data dir
	stop    chan struct{}
	done    chan struct{}

	mu  sync.Mutex
	ids map[string]bool
}

func watchTaskIDs(dataDir string) *taskIDs {
	w := &taskIDs{dataDir: dataDir, stop: make(chan struct{}), done: make(chan struct{}), ids: map[string]bool{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *taskIDs) sample() {
	es, _ := os.ReadDir(filepath.Join(w.dataDir, "containerd", "state", "io.containerd.runtime.v2.task", "minik8s"))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range es {
		w.ids[e.Name()] = true
	}
}

var shimStartRE = regexp.MustCompile(`io\.containerd\.runtime\.v2\.task/minik8s/([A-Za-z0-9][A-Za-z0-9_.-]*)`)

// all stops the sampling and returns every ID seen, sorted.
func (w *taskIDs) all() []string {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	if data, err := os.ReadFile(filepath.Join(w.dataDir, "containerd.log")); err == nil {
		for _, m := range shimStartRE.FindAllSubmatch(data, -1) {
			w.ids[string(m[1])] = true
		}
	}
	out := make([]string, 0, len(w.ids))
	for id := range w.ids {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// runcLeftovers lists what runc left of the containers ids on the host:
// its state dir (a `runc create` cut short leaves one with only exec.fifo)
// and the container's cgroups (containerd's default cgroup path,
// /minik8s/ID, in any hierarchy).
func runcLeftovers(ids []string) []string {
	var left []string
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(runcRoot, id)); err == nil {
			left = append(left, filepath.Join(runcRoot, id))
		}
		left = append(left, cgroupsOf(id)...)
	}
	return left
}

// cgroupsOf lists the cgroup dirs of container id that exist.
func cgroupsOf(id string) []string {
	cands := []string{filepath.Join("/sys/fs/cgroup", "minik8s", id)}
	if hs, err := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", "minik8s", id)); err == nil {
		cands = append(cands, hs...)
	}
	var out []string
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			out = append(out, c)
		}
	}
	return out
}

// removeRuncLeftovers removes what runcLeftovers found, when it is the
// residue of a container that never ran: a state dir without state.json
// and empty cgroups (rmdir refuses a cgroup that holds a process).
func removeRuncLeftovers(ids []string) []string {
	var did []string
	for _, id := range ids {
		dir := filepath.Join(runcRoot, id)
		if _, err := os.Stat(filepath.Join(dir, "state.json")); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(dir); err == nil && os.RemoveAll(dir) == nil {
				did = append(did, "removed "+dir)
			}
		}
		for _, cg := range cgroupsOf(id) {
			if syscall.Rmdir(cg) == nil {
				did = append(did, "removed "+cg)
			}
		}
	}
	return did
}
