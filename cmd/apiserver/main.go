// Command apiserver serves the minik8s API over etcd.
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
)

func main() {
	var cfg apiserver.Config
	var port int
	var bind, endpoints, level string
	flag.IntVar(&port, "port", 8080, "port to serve the API on")
	flag.StringVar(&bind, "address", "0.0.0.0", "address to bind")
	flag.StringVar(&cfg.DataDir, "data-dir", "./data", "directory of the embedded etcd's data")
	flag.StringVar(&endpoints, "etcd-endpoints", "", "comma-separated endpoints of an external etcd cluster (default: embedded etcd)")
	flag.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", apiserver.DefaultMaxBodyBytes, "largest request body accepted")
	flag.DurationVar(&cfg.FuncInstanceTTL, "func-instance-ttl", apiserver.DefaultFuncInstanceTTL, "how long function call records are kept")
	flag.IntVar(&cfg.MaxPendingCalls, "max-pending-calls", apiserver.DefaultMaxPendingCalls, "asynchronous calls waiting to run beyond which new ones get 429 (-1: no bound)")
	flag.StringVar(&cfg.ServiceCIDR, "service-cidr", apiserver.DefaultServiceCIDR, "range cluster IPs of services are allocated from")
	flag.StringVar(&level, "log-level", "info", "log level (debug, info, warn, error)")
	flag.Parse()

	if err := setLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
	cfg.Address = fmt.Sprintf("%s:%d", bind, port)
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
