// Command funcrunner drives function calls: it claims FuncInstances, runs
// their steps on the functions' pods and serves the synchronous calls the
// apiserver hands it. Run as many as you like, on any node.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/cli/flags"
	"minik8s/pkg/client"
)

func main() {
	var cfg funcrunner.Config
	var server, kubeconfig, level, gatewayHost string
	var gatewayPort int
	fs := flag.CommandLine
	flags.Client(fs, &server, client.ServerFromEnv(), &kubeconfig)
	fs.StringVar(&cfg.Identity, "identity", "", "name of this runner (default: hostname and a random suffix)")
	fs.StringVar(&cfg.Address, "address", "127.0.0.1:0", "address to serve the calls the apiserver hands over on (port 0: any free one)")
	fs.StringVar(&cfg.AdvertiseURL, "advertise-url", "", "URL the apiserver reaches this runner at (default: http:// and the bound address)")
	fs.IntVar(&cfg.HopLimit, "hop-limit", funcrunner.DefaultHopLimit, "most steps of one chain")
	fs.DurationVar(&cfg.ColdStartTimeout, "cold-start-timeout", funcrunner.DefaultColdStartTimeout, "how long a step waits for a pod")
	flags.Gateway(fs, &gatewayPort, 0, &gatewayHost)
	flags.NATSURL(fs, &cfg.NATSURL)
	flags.OTLPEndpoint(fs, &cfg.OTLPEndpoint)
	flags.EgressAllowCIDRs(fs, &cfg.EgressAllow)
	flags.ClusterCIDR(fs, &cfg.ClusterCIDR)
	flags.ServiceCIDR(fs, &cfg.ServiceCIDR, api.DefaultServiceCIDR)
	flags.LogLevel(fs, &level, "info")
	flag.Parse()

	if err := flags.SetLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "funcrunner: --log-level:", err)
		os.Exit(1)
	}
	c, err := client.FromFlags(fs, server, kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funcrunner:", err)
		os.Exit(1)
	}
	cfg.Client = c
	if gatewayPort != 0 {
		cfg.GatewayAddress = net.JoinHostPort(gatewayHost, strconv.Itoa(gatewayPort))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := funcrunner.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "funcrunner:", err)
		os.Exit(1)
	}
}
