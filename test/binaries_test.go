package test

// Helpers for tests that run the built binaries (bin/minik8s, bin/kubelet,
// bin/mkctl) as separate processes, and that check what such processes
// leave behind: processes, mounts and listening sockets.

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/pkg/subprocess"
	"minik8s/test/harness"
)

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not inside the module")
	}
	return filepath.Dir(gomod)
}

// binProc is a binary started by startBinary.
type binProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process has been waited for
	err  error         // its exit, valid after done
}

// startBinary starts a long-running binary writing to logPath. Pdeathsig
// delivers deathSig to it if this test process dies without its cleanup
// (subprocess.Start keeps the forking thread for the child's life).
func startBinary(t *testing.T, name, dir, logPath string, env []string, deathSig syscall.Signal, bin string, args ...string) *binProc {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: deathSig}
	p := &binProc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	wait, err := subprocess.Start(cmd)
	if err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = wait()
		logf.Close()
		close(p.done)
	}()
	return p
}

// exited says whether the process has ended, and how.
func (p *binProc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// wait waits at most d for the process to end.
func (p *binProc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// interrupt is Ctrl-C.
func (p *binProc) interrupt() { _ = p.cmd.Process.Signal(os.Interrupt) }

// stop is the cleanup: Ctrl-C, a bounded wait, then SIGKILL.
func (p *binProc) stop(t *testing.T, grace time.Duration) {
	if ok, _ := p.exited(); ok {
		return
	}
	p.interrupt()
	if p.wait(grace) {
		return
	}
	t.Errorf("%s did not stop within %v of SIGINT: killing it", p.name, grace)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// logTail is the end of the process's output.
func (p *binProc) logTail() string { return fileTail(p.log, 6000) }

func fileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	if len(data) > n {
		data = append([]byte("…"), data[len(data)-n:]...)
	}
	return string(data)
}

// procsOf lists the processes whose command line names dir (a containerd
// whose config is there, the shims whose -address is there, anything run
// from there), the processes with the given pids, and all their
// descendants (the containers under the shims).
func procsOf(dir string, pids ...int) []harness.Proc {
	return harness.ProcTree(func(p harness.Proc) bool {
		return slices.Contains(pids, p.PID) || strings.Contains(p.Cmdline, dir+"/")
	})
}

// podProcs lists the processes of pods on the nodes of the given
// addresses: the kubelet gives every container POD_IP, its node's address.
func podProcs(nodeIPs ...string) []harness.Proc {
	var out []harness.Proc
	for _, p := range harness.Procs() {
		if p.State == 'Z' {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if ip, ok := strings.CutPrefix(string(kv), "POD_IP="); ok && slices.Contains(nodeIPs, ip) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// podNetns lists the network namespaces of the pods whose namespaces are
// mounted under dir (kubelets with --pod-network cni keep them in their
// root), as /proc/PID/ns/net names them: read while they are mounted, it
// still finds a process left in one after the mount is gone.
func podNetns(dir string) map[string]bool {
	out := map[string]bool{}
	for _, m := range harness.MountsUnder(dir) {
		var st syscall.Stat_t
		if strings.Contains(m, "/netns/") && syscall.Stat(m, &st) == nil {
			out[fmt.Sprintf("net:[%d]", st.Ino)] = true
		}
	}
	return out
}

// procsInNetns lists the processes in one of the network namespaces ns.
func procsInNetns(ns map[string]bool) []harness.Proc {
	var out []harness.Proc
	for _, p := range harness.Procs() {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p.PID)); err == nil && ns[link] && p.State != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// uniqueProcs merges lists of processes, each once, by pid.
func uniqueProcs(lists ...[]harness.Proc) []harness.Proc {
	seen := map[int]bool{}
	var out []harness.Proc
	for _, l := range lists {
		for _, p := range l {
			if !seen[p.PID] {
				seen[p.PID] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// tcpListeners lists the IPv4 TCP sockets listening in the network
// namespace at netnsPath (this one when it is empty), as "ip:port".
func tcpListeners(netnsPath string) ([]netip4Port, error) {
	var data []byte
	var err error
	if netnsPath == "" {
		data, err = os.ReadFile("/proc/net/tcp")
	} else {
		// /proc/net is the reading process's namespace's.
		data, err = exec.Command("nsenter", "--net="+netnsPath, "cat", "/proc/net/tcp").Output()
	}
	if err != nil {
		return nil, err
	}
	var out []netip4Port
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		host, port, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		b, err := hex.DecodeString(host)
		if err != nil || len(b) != 4 {
			continue
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			continue
		}
		// The kernel prints the address in host (little-endian) order.
		out = append(out, netip4Port{IP: net.IPv4(b[3], b[2], b[1], b[0]), Port: int(p)})
	}
	return out, sc.Err()
}

type netip4Port struct {
	IP   net.IP
	Port int
}

func (a netip4Port) String() string { return net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port)) }

// killLeftovers is the last resort of a cleanup: SIGKILL every process of
// dir (see procsOf: all started for this test) and of the pods on the
// given node addresses (private to the test), wait for them, and detach
// the mounts below dir. It says what it had to do.
func killLeftovers(dir string, nodeIPs ...string) []string {
	var did []string
	ps := uniqueProcs(procsOf(dir), podProcs(nodeIPs...))
	for _, p := range ps {
		did = append(did, "killed "+p.String())
	}
	if err := harness.KillProcs(ps); err != nil {
		did = append(did, err.Error())
	}
	for _, m := range harness.MountsUnder(dir) {
		did = append(did, "unmounted "+m)
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	return did
}
