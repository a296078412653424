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
	"syscall"

	"minik8s/apiserver"
	"minik8s/pkg/cli/flags"
)

func main() {
	var cfg apiserver.Config
	var port, securePort int
	var bind, level string
	fs := flag.CommandLine
	flags.SecurePort(fs, &securePort)
	flags.BindAddress(fs, &bind)
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address the cluster reaches the secure port at, which the kubernetes Service's endpoints name (default: --bind-address, or the default route's link's address when that is 0.0.0.0)")
	flags.LocalPort(fs, &port, 0)
	flags.TLSSANs(fs, &cfg.TLSSANs)
	flags.TokenAuthFile(fs, &cfg.TokenAuthFile)
	fs.StringVar(&cfg.AuditLogPath, "audit-log-path", "", "audit log of every write (default DATA/audit.log; - : off)")
	flags.DataDir(fs, &cfg.DataDir)
	flags.Etcd(fs, &cfg.EtcdEndpoints, &cfg.EtcdTLS.CAFile, &cfg.EtcdTLS.CertFile, &cfg.EtcdTLS.KeyFile)
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", apiserver.DefaultMaxBodyBytes, "largest request body accepted")
	flags.FuncInstanceTTL(fs, &cfg.FuncInstanceTTL, apiserver.DefaultFuncInstanceTTL)
	flags.PendingCalls(fs, &cfg.MaxPendingCalls, apiserver.DefaultMaxPendingCalls, &cfg.MaxPendingCallBytes)
	flags.EtcdQuotaBytes(fs, &cfg.EtcdQuotaBytes)
	flags.OTLPEndpoint(fs, &cfg.OTLPEndpoint)
	flags.ServiceCIDR(fs, &cfg.ServiceCIDR, apiserver.DefaultServiceCIDR)
	flags.ServiceNodePortRange(fs, &cfg.ServiceNodePortRange, apiserver.DefaultServiceNodePortRange)
	flags.ClusterCIDR(fs, &cfg.ClusterCIDR)
	flags.NodeCIDRMaskSize(fs, &cfg.NodeCIDRMaskSize, apiserver.DefaultNodeCIDRMaskSize)
	flags.EgressAllowCIDRs(fs, &cfg.EgressAllowCIDRs)
	flags.LogLevel(fs, &level, "info")
	flag.Parse()

	if err := flags.SetLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
	if port != 0 {
		cfg.Address = fmt.Sprintf("127.0.0.1:%d", port)
	}
	if securePort != 0 {
		cfg.SecureAddress = net.JoinHostPort(bind, strconv.Itoa(securePort))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := apiserver.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
}
