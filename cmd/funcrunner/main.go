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

	log "github.com/sirupsen/logrus"

	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/egress"
)

func main() {
	var cfg funcrunner.Config
	var server, level string
	flag.StringVar(&server, "apiserver", client.ServerFromEnv(), "URL of the apiserver")
	var kubeconfig string
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with the apiserver and this component's credentials (its server wins over --apiserver unless that is given)")
	flag.StringVar(&cfg.Identity, "identity", "", "name of this runner (default: hostname and a random suffix)")
	flag.StringVar(&cfg.Address, "address", "127.0.0.1:0", "address to serve the calls the apiserver hands over on (port 0: any free one)")
	flag.StringVar(&cfg.AdvertiseURL, "advertise-url", "", "URL the apiserver reaches this runner at (default: http:// and the bound address)")
	flag.IntVar(&cfg.HopLimit, "hop-limit", funcrunner.DefaultHopLimit, "most steps of one chain")
	flag.DurationVar(&cfg.ColdStartTimeout, "cold-start-timeout", funcrunner.DefaultColdStartTimeout, "how long a step waits for a pod")
	var gatewayPort int
	var gatewayHost string
	flag.IntVar(&gatewayPort, "gateway-port", 0, "port of the function gateway serving the HTTP triggers (0: none)")
	flag.StringVar(&gatewayHost, "gateway-address", "127.0.0.1", "address the function gateway binds")
	flag.StringVar(&cfg.NATSURL, "nats-url", "", "NATS server (with JetStream) whose subjects the queue triggers consume (default: none)")
	flag.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", "", "send the spans of calls with OTLP over HTTP to this base URL (spans go to URL/v1/traces), e.g. http://127.0.0.1:4318")
	flag.Var((*egress.CIDRs)(&cfg.EgressAllow), "egress-allow-cidrs", egress.FlagUsage+" (give the apiserver the same list)")
	flag.StringVar(&cfg.ClusterCIDR, "cluster-cidr", api.DefaultClusterCIDR, "the cluster's pod range (the apiserver's --cluster-cidr): callbacks never reach it, nor the nodes' pod ranges")
	flag.StringVar(&cfg.ServiceCIDR, "service-cidr", api.DefaultServiceCIDR, "the cluster's range of cluster IPs (the apiserver's --service-cidr): callbacks never reach it, nor any Service's cluster IP")
	flag.StringVar(&level, "log-level", "info", "log level (debug, info, warn, error)")
	flag.Parse()

	l, err := log.ParseLevel(level)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funcrunner: --log-level:", err)
		os.Exit(1)
	}
	log.SetLevel(l)
	c, err := client.FromFlags(flag.CommandLine, server, kubeconfig)
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
