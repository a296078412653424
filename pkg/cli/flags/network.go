package flags

import (
	"flag"

	"minik8s/pkg/api"
)

// ServiceCIDR registers --service-cidr. minik8s up gives no default: its
// range depends on --pod-network.
func ServiceCIDR(fs *flag.FlagSet, p *string, def string) {
	fs.StringVar(p, "service-cidr", def, "range of the Services' cluster IPs: the apiserver allocates them from it, kubelets route it (--pod-network cni), callbacks never reach it; "+
		"give every component the same (minik8s up: "+api.DefaultServiceCIDR+", or "+api.HostNetworkServiceCIDR+" with --pod-network host, where every node's proxy listens on them)")
}

// ClusterCIDR registers --cluster-cidr.
func ClusterCIDR(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "cluster-cidr", api.DefaultClusterCIDR, "range of pod addresses: each node gets a slice of it when it registers; with --pod-network cni, pods' connections beyond it leave from the node's address; "+
		"callbacks never reach it, nor the nodes' slices; give every component the same")
}

// NodeCIDRMaskSize registers --node-cidr-mask-size.
func NodeCIDRMaskSize(fs *flag.FlagSet, p *int, def int) {
	fs.IntVar(p, "node-cidr-mask-size", def, "prefix length of each node's slice of the cluster range")
}

// ServiceNodePortRange registers --service-node-port-range.
func ServiceNodePortRange(fs *flag.FlagSet, p *string, def string) {
	fs.StringVar(p, "service-node-port-range", def, "ports NodePort Services get on every node, FIRST-LAST")
}

// PodNetwork registers --pod-network.
func PodNetwork(fs *flag.FlagSet, p *string, def string) {
	fs.StringVar(p, "pod-network", def, "how pods are networked: cni (each its own namespace and an address of the node's podCIDR, Services in the kernel, cluster DNS) or host (the node's network, allocated ports)")
}

// Node registers the node's --node-name and --node-ip.
func Node(fs *flag.FlagSet, name, ip *string) {
	fs.StringVar(name, "node-name", "", "name of this node (default: the host name, which bin/kubelet follows with --node-ip when that is given and not 127.0.0.1)")
	fs.StringVar(ip, "node-ip", "", "address of this node: the kubelet listens on it, other nodes route its pods through it (default: the address of the default route's link; 127.0.0.1 with --pod-network host, where pods listen on it)")
}

// ContainerdAddress registers --containerd-address; what an empty one
// means is the binary's.
func ContainerdAddress(fs *flag.FlagSet, p *string, def string) {
	fs.StringVar(p, "containerd-address", def, "containerd socket: the pods', or the one mkimage imports the images into (empty: minik8s up starts a private one under --data-dir, mkimage only builds)")
}

// IngressPorts registers --ingress-http-port and --ingress-https-port:
// where the node serves the cluster's Ingresses.
func IngressPorts(fs *flag.FlagSet, httpPort, httpsPort *int) {
	fs.IntVar(httpPort, "ingress-http-port", 80, "port on the node's address where its ingress controller serves the cluster's Ingresses over HTTP (0: none)")
	fs.IntVar(httpsPort, "ingress-https-port", 443, "port on the node's address where its ingress controller serves the cluster's Ingresses over HTTPS, with their TLS Secrets (0: none)")
}
