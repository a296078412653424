package framework

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// FreePort is a TCP port free on 127.0.0.1 right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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
