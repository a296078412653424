// Command minik8s runs a whole cluster in one process: `minik8s up`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver"
	"minik8s/cluster"
	"minik8s/controller/funcinstancegc"
	"minik8s/controller/functions"
	"minik8s/kubelet"
	"minik8s/pkg/egress"
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
	var sans string
	fs.IntVar(&cfg.SecurePort, "secure-port", 6443, "port of the secure API: TLS, authenticated (0: off); DATA/admin.kubeconfig reaches it as the admin")
	fs.StringVar(&cfg.BindAddress, "bind-address", "0.0.0.0", "address the secure port binds")
	fs.IntVar(&cfg.Port, "port", 8080, "local port: plain HTTP on --address that acts as the admin without credentials, for the reference design's scripts (0: off)")
	fs.StringVar(&cfg.Address, "address", "127.0.0.1", "loopback address the local port binds")
	fs.StringVar(&sans, "tls-san", "", "comma-separated extra names and addresses of the serving certificate")
	fs.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", "static token file: token,user,uid,\"group1,group2\" per line")
	fs.StringVar(&cfg.DataDir, "data-dir", "./data", "directory of etcd's data, the kubelet's files and the private containerd")
	fs.StringVar(&cfg.NodeIP, "node-ip", "", "address of the node: other nodes route its pods through it (default: the address of the default route's link; 127.0.0.1 with --pod-network host)")
	fs.StringVar(&cfg.PodNetwork, "pod-network", kubelet.PodNetworkCNI, "how pods are networked: cni (each its own namespace and address, Services in the kernel, cluster DNS) or host (the node's network, allocated ports)")
	fs.StringVar(&cfg.NodeName, "node-name", "", "name of the node (default: the host name)")
	fs.StringVar(&cfg.ContainerdAddress, "containerd-address", "", "socket of a running containerd (default: start a private one under the data dir)")
	fs.StringVar(&cfg.SchedulerPolicy, "policy", "least-allocated", "scheduling policy: least-allocated or round-robin")
	fs.DurationVar(&cfg.FuncScaleInterval, "func-scale-interval", functions.DefaultScaleInterval, "how often idle functions' counters are lowered by one")
	fs.DurationVar(&cfg.FuncIdleWindow, "func-idle-window", functions.DefaultIdleWindow, "how long without a call makes a function idle")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", "", "range cluster IPs of services are allocated from (default "+apiserver.DefaultServiceCIDR+"; "+apiserver.HostNetworkServiceCIDR+" with --pod-network host, where every node's proxy listens on them)")
	fs.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange, "ports NodePort Services get on every node, FIRST-LAST")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", apiserver.DefaultClusterCIDR, "range of pod addresses; each node gets a slice of it when it registers")
	fs.IntVar(&cfg.NodeCIDRMaskSize, "node-cidr-mask-size", apiserver.DefaultNodeCIDRMaskSize, "prefix length of each node's slice of the cluster range")
	fs.IntVar(&cfg.FuncInstanceBudget, "funcinstance-budget", funcinstancegc.DefaultBudget, "how many finished function instances are kept across the cluster; older ones are deleted")
	fs.IntVar(&cfg.MaxPendingCalls, "max-pending-calls", apiserver.DefaultMaxPendingCalls, "asynchronous calls waiting to run beyond which new ones get 429 (-1: no bound)")
	fs.Int64Var(&cfg.MaxPendingCallBytes, "max-pending-call-bytes", 0, "bytes the arguments of asynchronous calls waiting to run may hold, beyond which new ones get 429 (default 256 MiB, or an eighth of --etcd-quota-bytes when less; -1: no bound)")
	fs.Int64Var(&cfg.EtcdQuotaBytes, "etcd-quota-bytes", 0, "size the embedded etcd's database may reach before etcd refuses writes (its NOSPACE alarm; 0: etcd's default of 2 GiB)")
	fs.DurationVar(&cfg.FuncInstanceTTL, "func-instance-ttl", apiserver.DefaultFuncInstanceTTL, "how long function call records are kept")
	fs.IntVar(&cfg.GatewayPort, "gateway-port", 8081, "port of the function gateway serving the HTTP triggers, in the first function runner (0: none)")
	fs.StringVar(&cfg.GatewayAddress, "gateway-address", "127.0.0.1", "address the function gateway binds")
	fs.IntVar(&cfg.NATSPort, "nats-port", 4222, "port of the embedded NATS server (JetStream) the queue triggers consume from (0: none)")
	fs.StringVar(&cfg.NATSAddress, "nats-address", "127.0.0.1", "address the embedded NATS server binds")
	fs.StringVar(&cfg.NATSURL, "nats-url", "", "an existing NATS server (with JetStream) to use instead of the embedded one")
	fs.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", "", "send the spans of calls with OTLP over HTTP to this base URL (spans go to URL/v1/traces; any collector or Jaeger)")
	fs.Var((*egress.CIDRs)(&cfg.EgressAllowCIDRs), "egress-allow-cidrs", egress.FlagUsage+" (bin/funcrunner runners apart need the same list)")
	fs.IntVar(&cfg.FuncRunners, "funcrunners", 1, "function runners to start in this process (0: none; run bin/funcrunner instead)")
	fs.BoolVar(&cfg.SkipImages, "skip-images", false, "do not build or import the runtime image")
	fs.StringVar(&level, "log-level", "info", "log level (debug, info, warn, error)")
	_ = fs.Parse(os.Args[2:])
	if sans != "" {
		cfg.TLSSANs = strings.Split(sans, ",")
	}

	l, err := log.ParseLevel(level)
	if err != nil {
		fmt.Fprintln(os.Stderr, "minik8s:", err)
		os.Exit(1)
	}
	log.SetLevel(l)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cluster.Up(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "minik8s:", err)
		os.Exit(1)
	}
}
