package cluster

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"minik8s/apiserver"
	"minik8s/apiserver/alloc"
	"minik8s/kubelet"
	"minik8s/kubelet/network"
	"minik8s/pkg/errdefs"
)

// Config configures `minik8s up`.
type Config struct {
	// Port is the local port (plain HTTP on Address, a loopback address,
	// acting as the admin; 0: off).
	Address string
	Port    int
	// SecurePort (TLS, authenticated) binds BindAddress (default
	// 0.0.0.0); 0 turns it off.
	SecurePort  int
	BindAddress string
	// GatewayPort (0: none) is the function gateway's, on GatewayAddress
	// (default 127.0.0.1), served by the first function runner.
	GatewayPort    int
	GatewayAddress string
	// NATSPort (0: none) is the embedded NATS server's (with JetStream,
	// its streams under DataDir/nats), on NATSAddress (default
	// 127.0.0.1); NATSURL names an existing NATS instead.
	NATSPort    int
	NATSAddress string
	NATSURL     string
	// OTLPEndpoint: see funcrunner.Config.
	OTLPEndpoint string
	// TLSSANs and TokenAuthFile: see apiserver.Config.
	TLSSANs       []string
	TokenAuthFile string
	DataDir       string
	// NodeIP and NodeName of the one kubelet. NodeIP is by default the
	// address of the default route's link (127.0.0.1 with
	// PodNetwork host).
	NodeIP   string
	NodeName string
	// PodNetwork is how the kubelet networks pods (kubelet.PodNetworkCNI
	// by default, or kubelet.PodNetworkHost).
	PodNetwork string
	// IngressHTTPPort and IngressHTTPSPort: where the kubelet serves the
	// Ingresses, on NodeIP (0: none).
	IngressHTTPPort, IngressHTTPSPort int
	// ContainerdAddress of a running containerd; empty starts a private one
	// under DataDir.
	ContainerdAddress string
	SchedulerPolicy   string
	// FuncScaleInterval and FuncIdleWindow: see the function controller.
	FuncScaleInterval time.Duration
	FuncIdleWindow    time.Duration
	// FuncInstanceBudget is how many finished call records are kept
	// (funcinstancegc.DefaultBudget).
	FuncInstanceBudget int
	// WarmPoolSize: see controller.Config.
	WarmPoolSize int
	// FuncRunners is how many function runners run in this process; 0
	// leaves function calls to runners started apart (bin/funcrunner).
	FuncRunners int
	// SkipImages leaves the images alone (they are built when missing).
	SkipImages bool
	// ServiceCIDR is the range of the Services' cluster IPs
	// (apiserver.DefaultServiceCIDR; apiserver.HostNetworkServiceCIDR with
	// PodNetwork host, where two clusters on one machine need different
	// ranges, since every node's proxy listens on the cluster IPs).
	ServiceCIDR string
	// ClusterCIDR and NodeCIDRMaskSize: the pod range and the size of a
	// node's slice of it (see apiserver.Config).
	ClusterCIDR string
	// ServiceNodePortRange: where node ports come from.
	ServiceNodePortRange string
	NodeCIDRMaskSize     int
	// EgressAllowCIDRs: the ranges callbacks may reach although they
	// trust the platform (see funcrunner.Config.EgressAllow), given to the
	// apiserver and the runners alike. Empty by default.
	EgressAllowCIDRs []netip.Prefix
	// MaxPendingCalls, MaxPendingCallBytes, EtcdQuotaBytes and
	// FuncInstanceTTL: see apiserver.Config.
	MaxPendingCalls     int
	MaxPendingCallBytes int64
	EtcdQuotaBytes      int64
	FuncInstanceTTL     time.Duration
}

func (c *Config) setDefaults() error {
	if c.Address == "" {
		c.Address = "127.0.0.1"
	}
	if c.BindAddress == "" {
		c.BindAddress = "0.0.0.0"
	}
	if c.GatewayAddress == "" {
		c.GatewayAddress = "127.0.0.1"
	}
	if c.NATSAddress == "" {
		c.NATSAddress = "127.0.0.1"
	}
	if c.Port == 0 && c.SecurePort == 0 {
		return errdefs.Invalid("secure-port", "the secure port and the local port are both off: nothing could reach the cluster")
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return err
	}
	c.DataDir = abs
	if c.PodNetwork, err = kubelet.PodNetworkOf(c.PodNetwork); err != nil {
		return err
	}
	if c.NodeIP == "" {
		c.NodeIP = "127.0.0.1"
		if c.PodNetwork == kubelet.PodNetworkCNI {
			if c.NodeIP, err = network.DefaultAddress(); err != nil {
				return errdefs.Invalid("node-ip", "none given, and none found: %v", err)
			}
		}
	}
	if c.NodeName == "" {
		c.NodeName = defaultNodeName()
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = apiserver.DefaultServiceCIDR
		if c.PodNetwork == kubelet.PodNetworkHost {
			c.ServiceCIDR = apiserver.HostNetworkServiceCIDR
		}
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = apiserver.DefaultClusterCIDR
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = apiserver.DefaultNodeCIDRMaskSize
	}
	// A bad range fails before containerd and the images are set up.
	if _, err = alloc.ParseServiceCIDR(c.ServiceCIDR); err != nil {
		return err
	}
	_, err = alloc.ParseClusterCIDR(c.ClusterCIDR, c.NodeCIDRMaskSize)
	return err
}

// defaultNodeName is the host's name when it is a valid node name.
func defaultNodeName() string {
	h, err := os.Hostname()
	h = strings.ToLower(h)
	if err != nil || h == "" || strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" {
		return "node-1"
	}
	return h
}
