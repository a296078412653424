// Package funcrunner is the function data plane: it drives calls
// (FuncInstances) step by step on the functions' pods. Each runner holds a
// Lease; it claims unfinished instances by a compare-and-swap of
// status.runner and takes over those whose runner's Lease expired. It
// serves the synchronous calls the apiserver hands it, in memory, and
// reports the demand it sees per function on its Lease for the function
// controller. It reaches state only through pkg/client.
package funcrunner

import (
	"net/netip"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
)

// Config configures a runner.
type Config struct {
	// Client reaches the apiserver.
	Client *client.Client
	// Identity names the runner (its Lease, and status.runner of the
	// instances it drives); default: hostname plus a random suffix.
	Identity string
	// Address is where the runner serves the calls the apiserver hands it
	// (default 127.0.0.1:0, any free port); AdvertiseURL is how the
	// apiserver reaches it (default http:// + the bound address).
	Address      string
	AdvertiseURL string
	// HopLimit bounds the steps of one chain (loops are allowed).
	HopLimit int
	// MaxInstanceBytes bounds an instance as this runner writes it, JSON
	// encoded (default and ceiling function.MaxInstanceBytes): lower it
	// when etcd's --max-request-bytes is lower, so an outcome too large to
	// store fails the call at once rather than being retried.
	MaxInstanceBytes int
	// ColdStartTimeout bounds how long a step waits for a pod.
	ColdStartTimeout time.Duration
	// DemandInterval is how often changed demand is reported.
	DemandInterval time.Duration
	// GatewayAddress, when set, is where the runner serves the HTTP
	// triggers (the function gateway), e.g. "127.0.0.1:8081".
	GatewayAddress string
	// NATSURL, when set, is the NATS server (with JetStream) whose
	// subjects the queue triggers consume.
	NATSURL string
	// OTLPEndpoint, when set, is where the spans of calls go (OTLP over
	// HTTP, a base URL: spans go to URL/v1/traces); they are kept with the
	// instance either way.
	OTLPEndpoint string
	// EgressAllow lists the ranges callbacks may reach although the
	// runner's egress guard refuses them by default (loopback, link-local,
	// this machine's and the nodes' addresses, the pod and service ranges):
	// --egress-allow-cidrs. Empty by default.
	EgressAllow []netip.Prefix
	// ClusterCIDR and ServiceCIDR are the cluster's pod and service ranges
	// (api.DefaultClusterCIDR, api.DefaultServiceCIDR), which callbacks
	// never reach; the nodes' pod ranges and the Services' cluster IPs are
	// learned from the API besides.
	ClusterCIDR string
	ServiceCIDR string
}

const (
	DefaultHopLimit         = 100
	DefaultColdStartTimeout = 2 * time.Minute
	DefaultDemandInterval   = 250 * time.Millisecond
)

func (c *Config) setDefaults() {
	if c.Address == "" {
		c.Address = "127.0.0.1:0"
	}
	if c.HopLimit <= 0 {
		c.HopLimit = DefaultHopLimit
	}
	if c.MaxInstanceBytes <= 0 || c.MaxInstanceBytes > function.MaxInstanceBytes {
		c.MaxInstanceBytes = function.MaxInstanceBytes
	}
	if c.ColdStartTimeout <= 0 {
		c.ColdStartTimeout = DefaultColdStartTimeout
	}
	if c.DemandInterval <= 0 {
		c.DemandInterval = DefaultDemandInterval
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = api.DefaultClusterCIDR
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = api.DefaultServiceCIDR
	}
}
