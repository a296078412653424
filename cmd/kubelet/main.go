// Command kubelet is the minik8s node agent: it runs the pods bound to its
// node on containerd.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet"
	"minik8s/kubelet/network"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/clusterdns"
)

func main() {
	var cfg kubelet.Config
	var level string
	flag.StringVar(&cfg.APIServer, "apiserver", client.ServerFromEnv(), "URL of the apiserver")
	var kubeconfig string
	flag.StringVar(&cfg.Token, "token", os.Getenv("MINIK8S_TOKEN"), "node join token (the server's DATA/node-token; or set MINIK8S_TOKEN): the kubelet gets credentials of its own with it")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with the apiserver and this component's credentials (its server wins over --apiserver unless that is given)")
	flag.StringVar(&cfg.NodeName, "node-name", "", "name of this node (default: the host name, followed by --node-ip when that is given and not 127.0.0.1)")
	flag.StringVar(&cfg.NodeIP, "node-ip", "", "address of this node: the kubelet listens on it, other nodes route its pods through it (default: the address of the default route's link; 127.0.0.1 with --pod-network host, where pods listen on it)")
	flag.StringVar(&cfg.ContainerdAddress, "containerd-address", "./data/containerd/containerd.sock", "containerd socket")
	flag.StringVar(&cfg.RootDir, "root-dir", "", "directory of the pods' logs and volumes (default ./data/kubelet/NODE)")
	flag.IntVar(&cfg.Port, "port", 10250, "port of the kubelet's HTTP server (logs) on the node address; 0 picks one")
	flag.DurationVar(&cfg.HeartbeatPeriod, "heartbeat-period", 5*time.Second, "how often the node's Ready condition is renewed")
	flag.DurationVar(&cfg.StatsPeriod, "stats-period", 10*time.Second, "how often the node's and its containers' CPU and memory are read (kubectl top, autoscaling)")
	flag.DurationVar(&cfg.BackoffBase, "restart-backoff", 10*time.Second, "first back-off before restarting a crashed container")
	flag.DurationVar(&cfg.BackoffMax, "max-restart-backoff", 5*time.Minute, "longest back-off")
	flag.DurationVar(&cfg.PullTimeout, "image-pull-timeout", 2*time.Minute, "longest image pull")
	flag.Int64Var(&cfg.LogMaxBytes, "container-log-max-size", 4<<20, "size at which a container log rotates")
	flag.StringVar(&cfg.ContainerLogger, "container-logger", "", "path of minik8s-logger, which keeps each line of container output with its time (default: beside this program, else on PATH)")
	flag.StringVar(&cfg.PodNetwork, "pod-network", kubelet.PodNetworkCNI, "how pods are networked: cni (each its own namespace and an address of the node's podCIDR) or host (the node's network, allocated ports)")
	flag.StringVar(&cfg.ServiceCIDR, "service-cidr", api.DefaultServiceCIDR, "the cluster's range of cluster IPs (the apiserver's --service-cidr), routed by the node with --pod-network cni")
	flag.StringVar(&cfg.ClusterCIDR, "cluster-cidr", api.DefaultClusterCIDR, "the cluster's pod range (the apiserver's --cluster-cidr): with --pod-network cni, pods' connections beyond it leave from the node's address")
	flag.StringVar(&cfg.ClusterDomain, "cluster-domain", clusterdns.DefaultDomain, "the cluster's DNS domain, served to pods with --pod-network cni")
	flag.StringVar(&cfg.ResolvConf, "resolv-conf", "/etc/resolv.conf", "the node's resolver configuration: the cluster DNS forwards names outside the cluster to its nameservers")
	flag.StringVar(&cfg.CNIBinDir, "cni-bin-dir", network.DefaultBinDir, "directory of the CNI plugins (Debian's containernetworking-plugins)")
	flag.StringVar(&level, "log-level", "info", "log level (debug, info, warn, error)")
	flag.Parse()
	if kubeconfig != "" {
		c, err := client.FromFlags(flag.CommandLine, cfg.APIServer, kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubelet:", err)
			os.Exit(1)
		}
		cfg.Client = c
	}

	l, err := log.ParseLevel(level)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(1)
	}
	log.SetLevel(l)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := kubelet.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(1)
	}
}
