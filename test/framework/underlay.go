package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/netns"

	"minik8s/test/harness"
)

// UnderlaySubnet is the nodes' network of an Underlay. It exists only
// inside the namespaces the test creates, so every test may use it.
const UnderlaySubnet = "10.99.0.0/24"

// UnderlayServiceCIDR is the cluster IPs' range of a cluster on an
// underlay (Underlay.StartAPIServer): the nodes' kernel rules serve it,
// inside their namespaces only.
const UnderlayServiceCIDR = "10.43.0.0/16"

// Underlay is a test's own network, for clusters whose pods have their own
// addresses: one network namespace per simulated node, each with an
// address on UnderlaySubnet, joined by a bridge in a namespace of its own
// through veth pairs. Nothing is configured on the machine's network: the
// addresses, routes and rules exist only inside these namespaces, and none
// has a route out. The namespaces are named after the binary's RunToken,
// removed at the test's end, and swept if the binary dies first.
type Underlay struct {
	// Bridge is the namespace holding the bridge.
	Bridge string
	Nodes  []*NetNode
}

// NetNode is one simulated node's network namespace.
type NetNode struct {
	// Name is the namespace's name (`ip netns exec NAME …`).
	Name string
	// IP is the node's address on the underlay.
	IP string
}

var underlays atomic.Int64

// StartAPIServer starts an apiserver (on the machine's loopback, as
// StartAPIServer does) whose cluster IPs are UnderlayServiceCIDR, for the
// nodes of the underlay; configure, if set, is applied first.
func (u *Underlay) StartAPIServer(t testing.TB, configure func(*apiserver.Config)) *APIServer {
	t.Helper()
	return StartAPIServerWith(t, func(c *apiserver.Config) {
		if configure != nil {
			configure(c)
		}
		c.ServiceCIDR = UnderlayServiceCIDR
	})
}

// StartSecureAPIServer is StartAPIServer with the secure port on as well,
// on the machine's loopback (SecureURL), advertised at node's address on
// the underlay, where node relays it: the kubernetes Service leads the
// pods there, as to an apiserver serving on its node's address.
func (u *Underlay) StartSecureAPIServer(t testing.TB, node *NetNode) *APIServer {
	t.Helper()
	return u.StartSecureAPIServerWith(t, node, "", nil)
}

// StartSecureAPIServerWith is StartSecureAPIServer authenticating the
// bearer tokens of tokenFile too (lines of a static token file:
// token,user,uid,"groups"), with configure applied to the server's
// configuration first.
func (u *Underlay) StartSecureAPIServerWith(t testing.TB, node *NetNode, tokenFile string, configure func(*apiserver.Config)) *APIServer {
	t.Helper()
	secure := FreeAddr(t)
	_, port, _ := net.SplitHostPort(secure)
	var tokens string
	if tokenFile != "" {
		tokens = filepath.Join(t.TempDir(), "tokens.csv")
		if err := os.WriteFile(tokens, []byte(tokenFile), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := u.StartAPIServer(t, func(c *apiserver.Config) {
		if configure != nil {
			configure(c)
		}
		c.SecureAddress, c.AdvertiseAddress, c.TokenAuthFile = secure, node.IP, tokens
	})
	s.SecureURL = "https://" + secure
	node.ForwardAt(t, net.JoinHostPort(node.IP, port), secure)
	return s
}

// AdvertisedURL is where the nodes of the underlay and their pods reach
// the secure port of s, started by StartSecureAPIServer at node.
func AdvertisedURL(s *APIServer, node *NetNode) string {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.SecureURL, "https://"))
	return "https://" + net.JoinHostPort(node.IP, port)
}

// ControlPlaneIP is the underlay address of ControlPlane.
const ControlPlaneIP = "10.99.0.254"

// ControlPlane gives the bridge's namespace the underlay address
// ControlPlaneIP and returns it as a node of the underlay that runs no
// kubelet: a control plane's machine on the nodes' network, where an
// apiserver can be advertised (StartSecureAPIServer) so that every node,
// none of them holding the apiserver's address, joins it with the node
// token.
func (u *Underlay) ControlPlane(t testing.TB) *NetNode {
	t.Helper()
	ip(t, "-n", u.Bridge, "addr", "add", ControlPlaneIP+"/24", "dev", "br0")
	return &NetNode{Name: u.Bridge, IP: ControlPlaneIP}
}

// StartUnderlay creates an underlay of n nodes. It needs root and
// iproute2's `ip`: without them the test fails under MINIK8S_E2E=1 and is
// skipped otherwise.
func StartUnderlay(t testing.TB, n int) *Underlay {
	t.Helper()
	if os.Geteuid() != 0 {
		harness.NeedE2E(t, "network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		harness.NeedE2E(t, "network namespaces need iproute2's ip (apt-get install iproute2)")
	}
	if n < 1 || n > 200 {
		t.Fatalf("an underlay of %d nodes", n)
	}
	prefix := fmt.Sprintf("%s%s-u%d-", harness.RunDirPrefix, harness.RunToken(), underlays.Add(1))
	u := &Underlay{Bridge: prefix + "br"}
	t.Cleanup(func() { u.remove(t) })
	ip(t, "netns", "add", u.Bridge)
	ip(t, "-n", u.Bridge, "link", "set", "lo", "up")
	ip(t, "-n", u.Bridge, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", u.Bridge, "link", "set", "br0", "up")
	for i := 0; i < n; i++ {
		node := &NetNode{Name: fmt.Sprintf("%sn%d", prefix, i+1), IP: fmt.Sprintf("10.99.0.%d", i+1)}
		u.Nodes = append(u.Nodes, node)
		port := fmt.Sprintf("n%d", i+1)
		ip(t, "netns", "add", node.Name)
		ip(t, "-n", node.Name, "link", "set", "lo", "up")
		// Made in the bridge's namespace, one end moved to the node's.
		ip(t, "-n", u.Bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", node.Name)
		ip(t, "-n", u.Bridge, "link", "set", port, "master", "br0", "up")
		ip(t, "-n", node.Name, "addr", "add", node.IP+"/24", "dev", "eth0")
		ip(t, "-n", node.Name, "link", "set", "eth0", "up")
	}
	return u
}

// remove deletes the namespaces (their veths and the bridge go with them).
func (u *Underlay) remove(t testing.TB) {
	for _, name := range u.Namespaces() {
		if _, err := os.Stat(filepath.Join(harness.NetnsDir, name)); err != nil {
			continue
		}
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("removing network namespace %s: %v: %s", name, err, out)
		}
	}
}

// NamespaceName is a name for a namespace the test makes itself (with
// hack/netns-node, say) that the sweep removes with the underlay's if the
// binary dies first; the test removes it.
func (u *Underlay) NamespaceName(suffix string) string {
	return strings.TrimSuffix(u.Bridge, "br") + suffix
}

// Namespaces are the names of the underlay's namespaces.
func (u *Underlay) Namespaces() []string {
	names := []string{u.Bridge}
	for _, n := range u.Nodes {
		names = append(names, n.Name)
	}
	return names
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Command is name run in the node's namespace.
func (n *NetNode) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Do runs fn on a thread that is in the node's namespace: the sockets fn
// opens belong to the namespace for good, whichever thread uses them later.
func (n *NetNode) Do(fn func() error) error {
	return netns.Do(n.Path(), fn)
}

// Path is the file that keeps the node's namespace.
func (n *NetNode) Path() string { return filepath.Join(harness.NetnsDir, n.Name) }

// Listen listens in the node's namespace.
func (n *NetNode) Listen(network, address string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() (err error) {
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
}

// DialContext dials from the node's namespace.
func (n *NetNode) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() (err error) {
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// HTTPClient is a client whose connections start in the node's namespace.
func (n *NetNode) HTTPClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: n.DialContext}}
}
