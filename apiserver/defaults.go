package apiserver

import "minik8s/pkg/api"

// The defaults of Config's ranges.

// DefaultServiceCIDR is the range cluster IPs come from: the nodes' kernel
// rules serve them. A cluster whose pods share their nodes' network takes
// HostNetworkServiceCIDR instead, inside loopback, where every node's
// proxy listens on them without touching the network.
const (
	DefaultServiceCIDR     = api.DefaultServiceCIDR
	HostNetworkServiceCIDR = api.HostNetworkServiceCIDR
)

// DefaultClusterCIDR is the range pod addresses come from, as k3s has it;
// each node gets a slice of DefaultNodeCIDRMaskSize bits (256 nodes of
// 254 pods).
const (
	DefaultClusterCIDR      = api.DefaultClusterCIDR
	DefaultNodeCIDRMaskSize = 24
)

// DefaultServiceNodePortRange is where node ports come from, as in
// Kubernetes.
const DefaultServiceNodePortRange = "30000-32767"
