// Command minik8s runs a whole cluster in one process: `minik8s up`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"minik8s/apiserver"
	"minik8s/cluster"
	"minik8s/controller/funcinstancegc"
	"minik8s/controller/functions"
	"minik8s/controller/warmpool"
	"minik8s/kubelet"
	"minik8s/pkg/cli/flags"
	"minik8s/scheduler"
)

const usage = `usage: minik8s up [flags]

Starts the apiserver (embedded etcd), scheduler, controller manager and one
kubelet in this process, on a containerd of its own. Ctrl-C stops it.
`

func main() {
	if len(os.Args) < 2 || os.Args[1] != "up" {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	var cfg cluster.Config
	var level string
	flags.SecurePort(fs, &cfg.SecurePort)
	flags.BindAddress(fs, &cfg.BindAddress)
	flags.LocalPort(fs, &cfg.Port, 8080)
	fs.StringVar(&cfg.Address, "address", "127.0.0.1", "loopback address the local port binds")
	flags.TLSSANs(fs, &cfg.TLSSANs)
	flags.TokenAuthFile(fs, &cfg.TokenAuthFile)
	flags.DataDir(fs, &cfg.DataDir)
	flags.Node(fs, &cfg.NodeName, &cfg.NodeIP)
	flags.PodNetwork(fs, &cfg.PodNetwork, kubelet.PodNetworkCNI)
	flags.ContainerdAddress(fs, &cfg.ContainerdAddress, "")
	flags.SchedulerPolicy(fs, &cfg.SchedulerPolicy, scheduler.PolicyLeastAllocated, scheduler.PolicyLeastAllocated, scheduler.PolicyRoundRobin)
	flags.FuncScaling(fs, &cfg.FuncScaleInterval, functions.DefaultScaleInterval, &cfg.FuncIdleWindow, functions.DefaultIdleWindow)
	// Empty: the range depends on --pod-network (cluster.Config).
	flags.ServiceCIDR(fs, &cfg.ServiceCIDR, "")
	flags.ServiceNodePortRange(fs, &cfg.ServiceNodePortRange, apiserver.DefaultServiceNodePortRange)
	flags.ClusterCIDR(fs, &cfg.ClusterCIDR)
	flags.IngressPorts(fs, &cfg.IngressHTTPPort, &cfg.IngressHTTPSPort)
	flags.NodeCIDRMaskSize(fs, &cfg.NodeCIDRMaskSize, apiserver.DefaultNodeCIDRMaskSize)
	flags.FuncInstanceBudget(fs, &cfg.FuncInstanceBudget, funcinstancegc.DefaultBudget)
	flags.WarmPoolSize(fs, &cfg.WarmPoolSize, warmpool.DefaultSize)
	flags.PendingCalls(fs, &cfg.MaxPendingCalls, apiserver.DefaultMaxPendingCalls, &cfg.MaxPendingCallBytes)
	flags.EtcdQuotaBytes(fs, &cfg.EtcdQuotaBytes)
	flags.FuncInstanceTTL(fs, &cfg.FuncInstanceTTL, apiserver.DefaultFuncInstanceTTL)
	flags.Gateway(fs, &cfg.GatewayPort, 8081, &cfg.GatewayAddress)
	fs.IntVar(&cfg.NATSPort, "nats-port", 4222, "port of the embedded NATS server (JetStream) the queue triggers consume from (0: none)")
	fs.StringVar(&cfg.NATSAddress, "nats-address", "127.0.0.1", "address the embedded NATS server binds")
	flags.NATSURL(fs, &cfg.NATSURL)
	flags.OTLPEndpoint(fs, &cfg.OTLPEndpoint)
	flags.EgressAllowCIDRs(fs, &cfg.EgressAllowCIDRs)
	fs.IntVar(&cfg.FuncRunners, "funcrunners", 1, "function runners to start in this process (0: none; run bin/funcrunner instead)")
	fs.BoolVar(&cfg.SkipImages, "skip-images", false, "do not build or import the runtime image")
	flags.LogLevel(fs, &level, "info")
	_ = fs.Parse(os.Args[2:])

	if err := flags.SetLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "minik8s:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cluster.Up(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "minik8s:", err)
		os.Exit(1)
	}
}
