package network_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"minik8s/kubelet/network"
	"minik8s/pkg/netns"
)

// TestNoPodPosesAsAnother: a pod holding CAP_NET_RAW (containerd's default)
// plays the attacker on its node's bridge, against a function pod. It
// claims the gateway's address toward the function pod (ARP, then a
// connection from that address, which the fence would take as the node's),
// and the function pod's address and MAC toward the node (ARP, frames that
// teach the bridge, link-local ones too), so as to receive the runner's
// calls. None of it moves the function pod's neighbour entry, the node's,
// or the bridge's forwarding entry, and the connection is not made; pods
// and the node still talk as before. The same holds after a kubelet
// restart that finds the protection gone, and tearing the pods down
// leaves no rule behind.
func TestNoPodPosesAsAnother(t *testing.T) {
	ctx := context.Background()
	_, node, state := nodeNetwork(t)
	cfg := network.Config{StateDir: state, PodCIDR: testPodCIDR, ClusterCIDR: testClusterCIDR, NodeNetns: node}
	m, err := network.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fn := network.Pod{UID: "uid-fn", Namespace: "a", Name: "fn", Fenced: true}
	evil := network.Pod{UID: "uid-evil", Namespace: "b", Name: "evil"}
	pathF, ipF, err := m.SetUp(ctx, fn)
	if err != nil {
		t.Fatal(err)
	}
	pathE, ipE, err := m.SetUp(ctx, evil)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, pathF, net.JoinHostPort(ipF, "8080"))
	echo(t, pathE, net.JoinHostPort(ipE, "8080"))
	var udp net.PacketConn
	if err := netns.Do(pathF, func() (err error) { udp, err = net.ListenPacket("udp", net.JoinHostPort(ipF, "9999")); return err }); err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	fnMAC, evilMAC := link(t, pathF, "eth0").HardwareAddr, link(t, pathE, "eth0").HardwareAddr

	check := func(t *testing.T) {
		// The node and the function pod know each other, as after a call.
		talk(t, node, net.JoinHostPort(ipF, "8080"))
		gw, gwMAC := net.ParseIP(testPodGateway), link(t, node, network.DefaultBridge).HardwareAddr

		// (a) Toward the function pod: "the gateway is at my MAC".
		frames(t, pathE, arp(fnMAC, evilMAC, arpRequest, gw, net.ParseIP(ipF)))
		arpSync(t, pathE, fnMAC, ipF)
		if got := neighbour(t, pathF, "eth0", gw.String()); !bytes.Equal(got, gwMAC) {
			t.Errorf("the function pod's gateway %s is at %s, not the node's %s (the attacker is %s)", gw, got, gwMAC, evilMAC)
		}
		// A connection and a datagram from the gateway's address (the
		// frames a raw socket would send, made by the attacker's stack).
		nsExec(t, pathE, "ip", "addr", "add", testPodGateway+"/32", "dev", "eth0")
		nsExec(t, pathE, "ip", "neigh", "replace", ipF, "lladdr", fnMAC.String(), "dev", "eth0", "nud", "permanent")
		err := netns.Do(pathE, func() error {
			d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: gw}}
			if c, err := d.Dial("tcp", net.JoinHostPort(ipF, "8080")); err == nil {
				c.Close()
				t.Errorf("a pod connected to the function pod as the gateway %s", gw)
			}
			return send(gw, net.JoinHostPort(ipF, "9999"), "as the gateway")
		})
		if err != nil {
			t.Fatal(err)
		}
		nsExec(t, pathE, "ip", "addr", "del", testPodGateway+"/32", "dev", "eth0")
		nsExec(t, pathE, "ip", "neigh", "del", ipF, "dev", "eth0")
		// Once the function pod has answered the attacker, the node says
		// its own: the first word it hears from the gateway is the node's.
		arpSync(t, pathE, fnMAC, ipF)
		if err := netns.Do(node, func() error { return send(nil, net.JoinHostPort(ipF, "9999"), "from the node") }); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 100)
		udp.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, _, err := udp.ReadFrom(buf); err != nil || string(buf[:n]) != "from the node" {
			t.Errorf("the function pod heard %q (%v) first, not the node", buf[:n], err)
			udp.ReadFrom(buf) // the node's, for the next run
		}

		// (b) Toward the node: "the function pod is at my MAC", and
		// frames from the function pod's MAC (a link-local one too, which
		// the bridge learns from before any filter).
		frames(t, pathE, arp(gwMAC, evilMAC, arpRequest, net.ParseIP(ipF), gw),
			ethernet(broadcast, fnMAC, 0x88b5), ethernet(net.HardwareAddr{0x01, 0x80, 0xc2, 0, 0, 0x0e}, fnMAC, 0x88cc))
		arpSync(t, pathE, gwMAC, testPodGateway)
		if got := neighbour(t, node, network.DefaultBridge, ipF); !bytes.Equal(got, fnMAC) {
			t.Errorf("the node has the function pod %s at %s, not at its %s (the attacker is %s)", ipF, got, fnMAC, evilMAC)
		}
		if got, want := fdbPort(t, node, fnMAC), link(t, pathF, "eth0").ParentIndex; got != want {
			t.Errorf("the bridge sends the function pod's MAC %s to port %d, not to its own %d (the attacker's is %d)", fnMAC, got, want, link(t, pathE, "eth0").ParentIndex)
		}

		// Nothing legitimate is lost.
		talk(t, node, net.JoinHostPort(ipF, "8080"))
		talk(t, node, net.JoinHostPort(ipE, "8080"))
		talk(t, pathF, net.JoinHostPort(ipE, "8080"))
	}
	t.Run("set up", check)

	// A kubelet that restarts finds its pods without the protection (as
	// an older kubelet left them) and gives it back.
	nsExec(t, node, "ebtables-nft", "-t", "nat", "-F")
	for _, path := range []string{pathF, pathE} {
		var veth netlink.Link
		index := link(t, path, "eth0").ParentIndex
		if err := netns.Do(node, func() (err error) { veth, err = netlink.LinkByIndex(index); return err }); err != nil {
			t.Fatal(err)
		}
		nsExec(t, node, "bridge", "link", "set", "dev", veth.Attrs().Name, "learning", "on")
		nsExec(t, node, "bridge", "fdb", "replace", link(t, path, "eth0").HardwareAddr.String(), "dev", veth.Attrs().Name, "master", "dynamic")
	}
	again, err := network.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []network.Pod{fn, evil} {
		if _, _, err := again.SetUp(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("after a kubelet restart", check)

	for _, p := range []network.Pod{fn, evil} {
		if err := again.TearDown(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	rules := nsExec(t, node, "ebtables-nft-save")
	for _, mac := range []net.HardwareAddr{fnMAC, evilMAC} {
		if strings.Contains(rules, mac.String()) {
			t.Errorf("rules for the torn down pods are left:\n%s", rules)
		}
	}
}

const arpRequest, arpReply = 1, 2

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// send sends a datagram from local (any address when nil) to addr.
func send(local net.IP, addr, msg string) error {
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return err
	}
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: local}, to)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}

// nsExec runs a command in the namespace at path and returns its output.
func nsExec(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + path}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// link is the named link of the namespace at path.
func link(t *testing.T, path, name string) *netlink.LinkAttrs {
	t.Helper()
	var l netlink.Link
	if err := netns.Do(path, func() (err error) { l, err = netlink.LinkByName(name); return err }); err != nil {
		t.Fatal(err)
	}
	return l.Attrs()
}

// neighbour is the MAC the namespace at path has for ip on the named link.
func neighbour(t *testing.T, path, dev, ip string) net.HardwareAddr {
	t.Helper()
	index := link(t, path, dev).Index
	var mac net.HardwareAddr
	err := netns.Do(path, func() error {
		ns, err := netlink.NeighList(index, netlink.FAMILY_V4)
		for _, n := range ns {
			if n.IP.Equal(net.ParseIP(ip)) {
				mac = n.HardwareAddr
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return mac
}

// fdbPort is the index of the port the node's bridge sends mac to.
func fdbPort(t *testing.T, node string, mac net.HardwareAddr) int {
	t.Helper()
	port := 0
	err := netns.Do(node, func() error {
		ns, err := netlink.NeighList(0, unix.AF_BRIDGE)
		for _, n := range ns {
			if bytes.Equal(n.HardwareAddr, mac) {
				port = n.LinkIndex
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func ethernet(dst, src net.HardwareAddr, ethertype uint16) []byte {
	f := append(append(append([]byte{}, dst...), src...), byte(ethertype>>8), byte(ethertype))
	return append(f, make([]byte, 46)...)
}

// arp is an ARP frame from src, to dst, saying that sender is at src.
func arp(dst, src net.HardwareAddr, op uint16, sender, target net.IP) []byte {
	f := append(append(append([]byte{}, dst...), src...), 0x08, 0x06)
	f = binary.BigEndian.AppendUint16(f, 1)      // Ethernet
	f = binary.BigEndian.AppendUint16(f, 0x0800) // IPv4
	f = append(f, 6, 4)
	f = binary.BigEndian.AppendUint16(f, op)
	f = append(append(f, src...), sender.To4()...)
	return append(append(f, make([]byte, 6)...), target.To4()...)
}

// packetSocket is a raw socket on the eth0 of the namespace the calling
// thread is in, what CAP_NET_RAW gives a pod.
func packetSocket(proto uint16) (fd int, sa *unix.SockaddrLinklayer, err error) {
	l, err := netlink.LinkByName("eth0")
	if err != nil {
		return -1, nil, err
	}
	be := proto<<8 | proto>>8
	if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(be)); err != nil {
		return -1, nil, err
	}
	sa = &unix.SockaddrLinklayer{Protocol: be, Ifindex: l.Attrs().Index, Halen: 6}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, sa, nil
}

// frames sends raw frames from eth0 of the pod at path.
func frames(t *testing.T, path string, fs ...[]byte) {
	t.Helper()
	err := netns.Do(path, func() error {
		fd, sa, err := packetSocket(unix.ETH_P_ALL)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, f := range fs {
			copy(sa.Addr[:], f[:6])
			if err := unix.Sendto(fd, f, 0, sa); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// arpSync asks, from the pod at path and in its own name, who has ip at
// mac, and waits for the answer: the frames it sent before have been
// judged by then.
func arpSync(t *testing.T, path string, mac net.HardwareAddr, ip string) {
	t.Helper()
	err := netns.Do(path, func() error {
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(eth0, netlink.FAMILY_V4)
		if err != nil || len(addrs) == 0 {
			return fmt.Errorf("the pod's address: %v", err)
		}
		fd, sa, err := packetSocket(unix.ETH_P_ARP)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5}); err != nil {
			return err
		}
		f := arp(mac, eth0.Attrs().HardwareAddr, arpRequest, addrs[0].IP, net.ParseIP(ip))
		copy(sa.Addr[:], mac)
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			return err
		}
		buf := make([]byte, 1500)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return fmt.Errorf("waiting for %s's answer: %w", ip, err)
			}
			if n >= 42 && binary.BigEndian.Uint16(buf[20:]) == arpReply && net.IP(buf[28:32]).Equal(net.ParseIP(ip)) {
				return nil
			}
		}
		return fmt.Errorf("no answer from %s", ip)
	})
	if err != nil {
		t.Fatal(err)
	}
}
