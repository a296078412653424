package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a process as /proc shows it. Start (in clock ticks since boot)
// tells a reused pid apart.
type Proc struct {
	PID, PPID int
	Start     uint64
	State     byte // 'Z' for a zombie: dead, waiting to be reaped
	Cmdline   string
	Cwd       string
}

func (p Proc) String() string { return fmt.Sprintf("pid %d (%c): %s", p.PID, p.State, p.Cmdline) }

// ReadProc reads /proc/PID; ok is false once the process is gone.
func ReadProc(pid int) (Proc, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, false
	}
	// pid (comm) state ppid … starttime is field 22; the command name may
	// hold spaces and parentheses, so fields count from the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return Proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	cmdline := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	if cmdline == "" {
		cmdline = "[" + string(data[bytes.IndexByte(data, '(')+1:i]) + "]"
	}
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return Proc{PID: pid, PPID: ppid, Start: start, State: f[0][0], Cmdline: cmdline, Cwd: cwd}, true
}

// Alive reports whether pid is still the process that started at start.
func Alive(pid int, start uint64) bool {
	p, ok := ReadProc(pid)
	return ok && p.Start == start && p.State != 'Z'
}

// ProcStart is pid's start time, 0 once it is gone.
func ProcStart(pid int) uint64 {
	p, _ := ReadProc(pid)
	return p.Start
}

// Procs lists every process, zombies included.
func Procs() []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := ReadProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// ProcTree lists the live processes that match, with all their
// descendants (a shim's container processes), by pid; never this process
// or its ancestors, nor the processes in skip and theirs. Zombies are left
// to whoever reaps them: they hold nothing.
func ProcTree(match func(Proc) bool, skip ...int) []Proc {
	procs := Procs()
	excluded := map[int]bool{}
	for _, pid := range skip {
		excluded[pid] = true
	}
	for pid := os.Getpid(); pid > 1; {
		excluded[pid] = true
		p, ok := ReadProc(pid)
		if !ok {
			break
		}
		pid = p.PPID
	}
	children := map[int][]Proc{}
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p)
	}
	picked := map[int]bool{}
	var out []Proc
	var add func(p Proc)
	add = func(p Proc) {
		if picked[p.PID] || excluded[p.PID] || p.State == 'Z' {
			return
		}
		picked[p.PID] = true
		out = append(out, p)
		for _, c := range children[p.PID] {
			add(c)
		}
	}
	for _, p := range procs {
		if match(p) {
			add(p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// ProcsReferring lists the processes whose command line or working dir
// names path (containerd by its --config, its shims by -address and
// working dir, anything else started on it), with their descendants; see
// ProcTree for what is never listed.
func ProcsReferring(path string, skip ...int) []Proc {
	return ProcTree(func(p Proc) bool { return refersTo(p.Cmdline, path) || refersTo(p.Cwd, path) }, skip...)
}

// StillRunning lists those of ps that still run (same pid, same start).
func StillRunning(ps []Proc) []Proc {
	var out []Proc
	for _, p := range ps {
		if now, ok := ReadProc(p.PID); ok && now.Start == p.Start && now.State != 'Z' {
			out = append(out, now)
		}
	}
	return out
}

// KillProcs SIGKILLs procs (those still the processes listed) and waits up
// to 10s for them to be gone.
func KillProcs(procs []Proc) error {
	for _, p := range StillRunning(procs) {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := StillRunning(procs)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still there 10s after SIGKILL", left[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refersTo reports whether s names dir or a path below it (and not a
// sibling whose name merely starts like dir's).
func refersTo(s, dir string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], dir)
		if j < 0 {
			return false
		}
		end := i + j + len(dir)
		if end == len(s) || s[end] == '/' || s[end] == ' ' {
			return true
		}
		i = end
	}
}

// MountsUnder lists the mount points below dir in this mount namespace,
// deepest first.
func MountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") && !slices.Contains(out, fields[4]) {
			out = append(out, fields[4])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
