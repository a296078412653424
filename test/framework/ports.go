package framework

import (
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// FreePort is a TCP port free on 127.0.0.1 right now, below the kernel's
// ephemeral range and the default NodePort range (30000-32767): a port
// from the ephemeral range (what listening on port 0 gives) may be taken
// meanwhile as the local port of any outgoing connection of the tests
// running beside, and the component started on it then fails with
// "address already in use".
func FreePort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	for range 200 {
		port := 10000 + mrand.IntN(min(low, 30000)-10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			l.Close()
			return port
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	return low
}

// FreeAddr is 127.0.0.1:PORT with a port free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// OwnLoopbackListeners are the 127.0.0.1:PORT addresses this process
// listens on right now (read from /proc): how a test finds a port a
// component it runs in-process chose and does not tell, such as the
// embedded etcd's.
func OwnLoopbackListeners(t testing.TB) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			if inode, ok := strings.CutPrefix(link, "socket:["); ok {
				own[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	// The machine's namespace is this thread's: a thread netns.Do moves
	// into a node's namespace runs nothing else after. /proc/self/net is
	// the main thread's, which stays in a node's namespace for good when
	// netns.Do happened to run there (the runtime wedges a locked main
	// thread instead of ending it).
	runtime.LockOSThread()
	data, err := os.ReadFile("/proc/thread-self/net/tcp")
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n")[1:] {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !own[f[9]] { // 0A: LISTEN
			continue
		}
		host, port, ok := strings.Cut(f[1], ":")
		p, err := strconv.ParseUint(port, 16, 16)
		if !ok || err != nil || host != "0100007F" { // 127.0.0.1, little-endian
			continue
		}
		out = append(out, "127.0.0.1:"+strconv.Itoa(int(p)))
	}
	return out
}
