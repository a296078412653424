// Package network gives pods their own network: a network namespace per
// pod, set up through CNI with the standard plugins (bridge, host-local,
// loopback, portmap), driven with libcni. The containers of a pod join its
// namespace; the node reaches the pods over the bridge.
package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/netns"
	"minik8s/pkg/netpol"
)

// Defaults of Config.
const (
	// DefaultBinDir is where Debian's containernetworking-plugins puts them.
	DefaultBinDir = "/usr/lib/cni"
	DefaultBridge = "minik8s0"
	// networkName names the network in CNI's cache and results.
	networkName = "minik8s"
	podIfName   = "eth0"
	// confFile, in the state dir, is the network's configuration.
	confFile = "network.conflist"
)

// Config is a node's pod network.
type Config struct {
	// BinDir holds the CNI plugins (DefaultBinDir).
	BinDir string
	// StateDir, under the kubelet's root, keeps the pods' namespaces
	// (netns/UID), libcni's cache and host-local's allocations.
	StateDir string
	// PodCIDR is the node's slice of the cluster's pod range.
	PodCIDR string
	// ClusterCIDR is the cluster's pod range, which fenced pods refuse
	// (PodCIDR when empty).
	ClusterCIDR string
	// Bridge is the node's bridge (DefaultBridge); its address is the
	// first of PodCIDR, the pods' gateway.
	Bridge string
	// NodeNetns, when set, is the file of the network namespace the node's
	// side lives in (bridge, veths, routes), when that is not the
	// kubelet's own: a simulated node of a test.
	NodeNetns string
}

// Pod names the pod a namespace is for.
type Pod struct {
	UID, Namespace, Name string
	// Ports are published on the node's addresses (hostPort).
	Ports []PortMapping
	// Fenced pods (functions') take no connection from the pod range but
	// from their node: see fence.go.
	Fenced bool
}

// PortMapping publishes a pod's port on the node: portmap's DNAT rules
// send HostPort at the node's addresses (HostIP's only, when set) to the
// pod's ContainerPort.
type PortMapping struct {
	HostPort, ContainerPort int32
	// Protocol is tcp or udp (sctp too, where the kernel has it).
	Protocol string
	HostIP   string
}

// Manager sets up and tears down the pods' networks of one node.
type Manager struct {
	cfg      Config
	cni      *libcni.CNIConfig
	list     *libcni.NetworkConfigList
	loopback *libcni.NetworkConfig

	// A pod's set up and tear down take turns (under its podLock); CNI
	// plugins lock their own state.
	mu    sync.Mutex
	locks map[string]*podLock

	// rulesMu serializes writing the pods' anti-spoofing rules; ruled
	// says this manager wrote them all, with the jump to them.
	rulesMu sync.Mutex
	ruled   bool

	// filterMu serializes writing the pods' own filter tables (policy.go):
	// the fenced pods, the rules of the pods' policies, and the tables
	// last written, by UID.
	filterMu sync.Mutex
	fenced   map[string]bool
	policies map[string]netpol.Rules
	tables   map[string]string
}

type podLock struct {
	sync.Mutex
	refs int
}

// New checks cfg and builds the network configuration.
func New(cfg Config) (*Manager, error) {
	if cfg.BinDir == "" {
		cfg.BinDir = DefaultBinDir
	}
	if cfg.Bridge == "" {
		cfg.Bridge = DefaultBridge
	}
	if cfg.StateDir == "" {
		return nil, errors.New("network: no state dir")
	}
	_, subnet, err := net.ParseCIDR(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("network: pod CIDR %q is not an IPv4 range", cfg.PodCIDR)
	}
	masq, err := MasqueradeAddress(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	if _, cluster, err := net.ParseCIDR(cfg.ClusterCIDR); cfg.ClusterCIDR != "" && (err != nil || !cluster.Contains(subnet.IP)) {
		return nil, fmt.Errorf("network: cluster CIDR %q is not a range holding the pod CIDR %s", cfg.ClusterCIDR, cfg.PodCIDR)
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, plugin)); err != nil {
			return nil, fmt.Errorf("network: the CNI plugin %s is not in %s (apt-get install containernetworking-plugins): %w", plugin, cfg.BinDir, err)
		}
	}
	for _, bin := range []string{"iptables-restore", "ebtables-nft", "ebtables-nft-restore", "ebtables-nft-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("network: %s is missing (apt-get install iptables): %w", bin, err)
		}
	}
	conf := confList(cfg, subnet, masq)
	// Kept for ReleaseAll, which runs when no kubelet knows the podCIDR.
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.StateDir, confFile), conf, 0o644); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return newManager(cfg, conf)
}

func newManager(cfg Config, conf []byte) (*Manager, error) {
	list, err := libcni.ConfListFromBytes(conf)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	lo, err := libcni.ConfFromBytes([]byte(`{"cniVersion":"1.0.0","name":"minik8s-loopback","type":"loopback"}`))
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	if cfg.Bridge == "" && len(list.Plugins) > 0 {
		// ReleaseAll's: the bridge the configuration names.
		var bridge struct{ Bridge string }
		_ = json.Unmarshal(list.Plugins[0].Bytes, &bridge)
		cfg.Bridge = bridge.Bridge
	}
	return &Manager{cfg: cfg, list: list, loopback: lo, locks: map[string]*podLock{},
		fenced: map[string]bool{}, tables: map[string]string{},
		cni: libcni.NewCNIConfigWithCacheDir([]string{cfg.BinDir}, filepath.Join(cfg.StateDir, "cache"), nil)}, nil
}

// ReleaseAll tears down every pod network kept in stateDir (a kubelet's
// Config.StateDir), with the configuration the kubelet last used: what
// `minik8s up` does once it has removed every container, so that no
// namespace or address outlives the pods. A dir no network was ever set
// up in is no error.
func ReleaseAll(ctx context.Context, stateDir, binDir string) error {
	conf, err := os.ReadFile(filepath.Join(stateDir, confFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	if binDir == "" {
		binDir = DefaultBinDir
	}
	m, err := newManager(Config{BinDir: binDir, StateDir: stateDir}, conf)
	if err != nil {
		return err
	}
	uids, err := m.Pods()
	if err != nil {
		return err
	}
	var errs []error
	for _, uid := range uids {
		errs = append(errs, m.TearDown(ctx, Pod{UID: uid}))
	}
	return errors.Join(errs...)
}

// confList is the node's network: a bridge with the pods' gateway on it,
// addresses from the node's slice up to (not with) the masquerade address,
// port mappings (hostPort) by portmap. Nothing is masqueraded: traffic
// between nodes is routed (host-gw).
func confList(cfg Config, subnet *net.IPNet, masq net.IP) []byte {
	last := slices.Clone(masq.To4())
	last[3]--
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       networkName,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": cfg.Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": subnet.String(), "rangeEnd": last.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": filepath.Join(cfg.StateDir, "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, _ := json.Marshal(conf)
	return data
}

// PodCIDR is the node's slice of the pod range.
func (m *Manager) PodCIDR() string { return m.cfg.PodCIDR }

// Gateway is the pods' gateway, the bridge's address: the first of the
// node's slice (host-local's default), where the node serves its pods.
func (m *Manager) Gateway() net.IP {
	_, n, _ := net.ParseCIDR(m.cfg.PodCIDR)
	gw := n.IP.To4()
	gw = net.IPv4(gw[0], gw[1], gw[2], gw[3]+1).To4()
	return gw
}

// Path is the file that keeps a pod's namespace.
func (m *Manager) Path(uid string) string { return filepath.Join(m.cfg.StateDir, "netns", uid) }

func (m *Manager) runtimeConf(p Pod, path, ifName string) *libcni.RuntimeConf {
	rc := &libcni.RuntimeConf{ContainerID: p.UID, NetNS: path, IfName: ifName,
		Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", p.Namespace}, {"K8S_POD_NAME", p.Name}, {"K8S_POD_UID", p.UID}}}
	if len(p.Ports) > 0 {
		// portmap's capability, spelled as its runtimeConfig has it.
		var mappings []map[string]any
		for _, pm := range p.Ports {
			e := map[string]any{"hostPort": pm.HostPort, "containerPort": pm.ContainerPort, "protocol": strings.ToLower(pm.Protocol)}
			if pm.HostIP != "" {
				e["hostIP"] = pm.HostIP
			}
			mappings = append(mappings, e)
		}
		rc.CapabilityArgs = map[string]any{"portMappings": mappings}
	}
	return rc
}

func (m *Manager) lock(uid string) func() {
	m.mu.Lock()
	l, ok := m.locks[uid]
	if !ok {
		l = &podLock{}
		m.locks[uid] = l
	}
	l.refs++
	m.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		m.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(m.locks, uid)
		}
		m.mu.Unlock()
	}
}

// SetUp gives the pod its namespace and address, or returns those it has
// (a kubelet that restarted finds its pods set up). It returns the path of
// the namespace, for the containers to join, and the pod's IP.
func (m *Manager) SetUp(ctx context.Context, p Pod) (path, ip string, err error) {
	defer m.lock(p.UID)()
	path = m.Path(p.UID)
	if netns.Is(path) {
		if res, err := m.cachedResult(p, path); err == nil {
			if ip, err := firstIP(res); err == nil {
				// A kubelet that restarted: the fence and the port's
				// guard again, in case the pod was set up by one that
				// had none.
				if err := m.fence(ctx, p.UID, p.Fenced, false); err != nil {
					return "", "", fmt.Errorf("fencing pod %s/%s: %w", p.Namespace, p.Name, err)
				}
				if err := m.guard(ctx, res, false); err != nil {
					return "", "", fmt.Errorf("guarding the port of pod %s/%s: %w", p.Namespace, p.Name, err)
				}
				return path, ip, nil
			}
		}
	} else {
		// A file without a namespace: a kubelet that died making it.
		if err := netns.Remove(path); err != nil {
			return "", "", err
		}
		if err := netns.New(path); err != nil {
			return "", "", err
		}
	}
	defer func() {
		if err != nil {
			// Nothing half set up stays behind: no namespace, no address.
			_ = m.tearDown(context.WithoutCancel(ctx), p)
		}
	}()
	var res *types100.Result
	err = netns.Do(m.cfg.NodeNetns, func() error {
		if _, err := m.cni.AddNetwork(ctx, m.loopback, m.runtimeConf(p, path, "lo")); err != nil {
			return fmt.Errorf("loopback: %w", err)
		}
		r, err := m.cni.AddNetworkList(ctx, m.list, m.runtimeConf(p, path, podIfName))
		if err != nil {
			return err
		}
		res, err = types100.NewResultFromResult(r)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("network of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	ip, err = firstIP(res)
	if err != nil {
		return "", "", fmt.Errorf("network of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	// Before any container of the pod runs, so before it listens, or
	// sends anything: the fence, and the policies known of the pod.
	if err := m.fence(ctx, p.UID, p.Fenced, true); err != nil {
		return "", "", fmt.Errorf("fencing pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if err := m.guard(ctx, res, true); err != nil {
		return "", "", fmt.Errorf("guarding the port of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if err := m.ensureMasqueradeAddress(); err != nil {
		// Only replies to masqueraded connections of this node's pods
		// miss it: the pod itself is fine.
		log.WithError(err).Warn("network: pods of this node may not reach their Services answered on this node")
	}
	return path, ip, nil
}

// errNoResult: libcni keeps no result of the pod's set up.
var errNoResult = errors.New("no cached result")

// cachedResult is libcni's cache of the pod's last set up.
func (m *Manager) cachedResult(p Pod, path string) (*types100.Result, error) {
	r, err := m.cni.GetNetworkListCachedResult(m.list, m.runtimeConf(p, path, podIfName))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errNoResult
	}
	return types100.NewResultFromResult(r)
}

func firstIP(res *types100.Result) (string, error) {
	for _, c := range res.IPs {
		if c.Address.IP.To4() != nil {
			return c.Address.IP.String(), nil
		}
	}
	return "", errors.New("the CNI result has no IPv4 address")
}

// TearDown releases the pod's address and removes its namespace, whatever
// is left of them; a pod with nothing left is no error.
func (m *Manager) TearDown(ctx context.Context, p Pod) error {
	defer m.lock(p.UID)()
	return m.tearDown(ctx, p)
}

func (m *Manager) tearDown(ctx context.Context, p Pod) error {
	path := m.Path(p.UID)
	nsPath := path
	if !netns.Is(path) {
		// CNI's DEL still frees the address without the namespace.
		nsPath = ""
	}
	err := netns.Do(m.cfg.NodeNetns, func() error {
		return m.cni.DelNetworkList(ctx, m.list, m.runtimeConf(p, nsPath, podIfName))
	})
	if err != nil {
		return fmt.Errorf("tearing down the network of pod %s: %w", p.UID, err)
	}
	if err := netns.Remove(path); err != nil {
		return err
	}
	m.filterMu.Lock()
	delete(m.fenced, p.UID)
	delete(m.tables, p.UID)
	m.filterMu.Unlock()
	// Its port is gone with its veth: its rules go too.
	if err := m.writeRules(ctx); err != nil {
		return fmt.Errorf("tearing down the network of pod %s: %w", p.UID, err)
	}
	return nil
}

// Pods are the UIDs of the pods whose namespaces this node keeps: after a
// restart, the kubelet tears down those of pods it no longer runs.
func (m *Manager) Pods() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(m.cfg.StateDir, "netns"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, e := range entries {
		uids = append(uids, e.Name())
	}
	return uids, nil
}
