// Command apiserver serves the minik8s API over etcd.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver"
	"minik8s/pkg/egress"
)

func main() {
	var cfg apiserver.Config
	var port, securePort int
	var bind, endpoints, level, sans string
	flag.IntVar(&securePort, "secure-port", 6443, "port of the secure API (TLS, authenticated; 0: off)")
	flag.StringVar(&bind, "bind-address", "0.0.0.0", "address the secure port binds")
	flag.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address the cluster reaches the secure port at, which the kubernetes Service's endpoints name (default: --bind-address, or the default route's link's address when that is 0.0.0.0)")
	flag.IntVar(&port, "port", 0, "local port: plain HTTP on 127.0.0.1 that acts as the admin without credentials, for the reference design's scripts (0: off)")
	flag.StringVar(&sans, "tls-san", "", "comma-separated extra names and addresses of the serving certificate")
	flag.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", "static token file: token,user,uid,\"group1,group2\" per line")
	flag.StringVar(&cfg.AuditLogPath, "audit-log-path", "", "audit log of every write (default DATA/audit.log; - : off)")
	flag.StringVar(&cfg.DataDir, "data-dir", "./data", "directory of the embedded etcd's data, the cluster CA and the credentials")
	flag.StringVar(&endpoints, "etcd-endpoints", "", "comma-separated endpoints of an external etcd cluster (default: embedded etcd, TLS with the cluster CA)")
	flag.StringVar(&cfg.EtcdTLS.CAFile, "etcd-cafile", "", "CA that verifies the external etcd")
	flag.StringVar(&cfg.EtcdTLS.CertFile, "etcd-certfile", "", "client certificate for the external etcd")
	flag.StringVar(&cfg.EtcdTLS.KeyFile, "etcd-keyfile", "", "client key for the external etcd")
	flag.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", apiserver.DefaultMaxBodyBytes, "largest request body accepted")
	flag.DurationVar(&cfg.FuncInstanceTTL, "func-instance-ttl", apiserver.DefaultFuncInstanceTTL, "how long function call records are kept")
	flag.IntVar(&cfg.MaxPendingCalls, "max-pending-calls", apiserver.DefaultMaxPendingCalls, "asynchronous calls waiting to run beyond which new ones get 429 (-1: no bound)")
	flag.Int64Var(&cfg.MaxPendingCallBytes, "max-pending-call-bytes", 0, "bytes the arguments of asynchronous calls waiting to run may hold, beyond which new ones get 429 (default 256 MiB, or an eighth of --etcd-quota-bytes when less; -1: no bound)")
	flag.Int64Var(&cfg.EtcdQuotaBytes, "etcd-quota-bytes", 0, "size the embedded etcd's database may reach before etcd refuses writes (its NOSPACE alarm; 0: etcd's default of 2 GiB)")
	flag.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", "", "send the apiserver's spans of calls with OTLP over HTTP to this base URL (spans go to URL/v1/traces)")
	flag.StringVar(&cfg.ServiceCIDR, "service-cidr", apiserver.DefaultServiceCIDR, "range cluster IPs of services are allocated from")
	flag.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange, "ports NodePort Services get on every node, FIRST-LAST")
	flag.StringVar(&cfg.ClusterCIDR, "cluster-cidr", apiserver.DefaultClusterCIDR, "range of pod addresses; each node gets a slice of it when it registers")
	flag.IntVar(&cfg.NodeCIDRMaskSize, "node-cidr-mask-size", apiserver.DefaultNodeCIDRMaskSize, "prefix length of each node's slice of the cluster range")
	flag.Var((*egress.CIDRs)(&cfg.EgressAllowCIDRs), "egress-allow-cidrs", egress.FlagUsage+" (give the function runners the same list)")
	flag.StringVar(&level, "log-level", "info", "log level (debug, info, warn, error)")
	flag.Parse()

	if err := setLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
	if port != 0 {
		cfg.Address = fmt.Sprintf("127.0.0.1:%d", port)
	}
	if securePort != 0 {
		cfg.SecureAddress = net.JoinHostPort(bind, strconv.Itoa(securePort))
	}
	if sans != "" {
		cfg.TLSSANs = strings.Split(sans, ",")
	}
	if endpoints != "" {
		cfg.EtcdEndpoints = strings.Split(endpoints, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := apiserver.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
}

func setLogLevel(level string) error {
	l, err := log.ParseLevel(level)
	if err != nil {
		return err
	}
	log.SetLevel(l)
	return nil
}
