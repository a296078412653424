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

	"minik8s/kubelet"
	"minik8s/kubelet/network"
	"minik8s/pkg/api"
	"minik8s/pkg/cli/flags"
	"minik8s/pkg/client"
	"minik8s/pkg/clusterdns"
)

func main() {
	var cfg kubelet.Config
	var level, kubeconfig string
	fs := flag.CommandLine
	flags.Client(fs, &cfg.APIServer, client.ServerFromEnv(), &kubeconfig)
	flags.JoinToken(fs, &cfg.Token)
	flags.Node(fs, &cfg.NodeName, &cfg.NodeIP)
	flags.ContainerdAddress(fs, &cfg.ContainerdAddress, "./data/containerd/containerd.sock")
	fs.StringVar(&cfg.RootDir, "root-dir", "", "directory of the pods' logs and volumes (default ./data/kubelet/NODE)")
	fs.StringVar(&cfg.StorageDir, "local-path-dir", "", "directory of the local-path provisioner's volumes on this node (default ROOT-DIR/storage)")
	fs.IntVar(&cfg.Port, "port", 10250, "port of the kubelet's HTTP server (logs) on the node address; 0 picks one")
	fs.DurationVar(&cfg.HeartbeatPeriod, "heartbeat-period", 5*time.Second, "how often the node's Ready condition is renewed")
	fs.DurationVar(&cfg.StatsPeriod, "stats-period", 10*time.Second, "how often the node's and its containers' CPU and memory are read (kubectl top, autoscaling)")
	fs.DurationVar(&cfg.BackoffBase, "restart-backoff", 10*time.Second, "first back-off before restarting a crashed container")
	fs.DurationVar(&cfg.BackoffMax, "max-restart-backoff", 5*time.Minute, "longest back-off")
	fs.DurationVar(&cfg.PullTimeout, "image-pull-timeout", 2*time.Minute, "longest image pull")
	fs.Int64Var(&cfg.LogMaxBytes, "container-log-max-size", 4<<20, "size at which a container log rotates")
	fs.StringVar(&cfg.ContainerLogger, "container-logger", "", "path of minik8s-logger, which keeps each line of container output with its time (default: beside this program, else on PATH)")
	flags.PodNetwork(fs, &cfg.PodNetwork, kubelet.PodNetworkCNI)
	flags.ServiceCIDR(fs, &cfg.ServiceCIDR, api.DefaultServiceCIDR)
	flags.ClusterCIDR(fs, &cfg.ClusterCIDR)
	flags.IngressPorts(fs, &cfg.IngressHTTPPort, &cfg.IngressHTTPSPort)
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", clusterdns.DefaultDomain, "the cluster's DNS domain, served to pods with --pod-network cni")
	fs.StringVar(&cfg.ResolvConf, "resolv-conf", "/etc/resolv.conf", "the node's resolver configuration: the cluster DNS forwards names outside the cluster to its nameservers")
	fs.StringVar(&cfg.CNIBinDir, "cni-bin-dir", network.DefaultBinDir, "directory of the CNI plugins (Debian's containernetworking-plugins)")
	flags.LogLevel(fs, &level, "info")
	flag.Parse()
	if kubeconfig != "" {
		c, err := client.FromFlags(fs, cfg.APIServer, kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubelet:", err)
			os.Exit(1)
		}
		cfg.Client = c
	}

	if err := flags.SetLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := kubelet.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(1)
	}
}
