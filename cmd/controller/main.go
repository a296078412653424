// Command controller runs the minik8s controller manager.
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

	"minik8s/controller"
	"minik8s/controller/funcinstancegc"
	"minik8s/controller/functions"
	"minik8s/controller/nodelifecycle"
	"minik8s/pkg/client"
)

func main() {
	var cfg controller.Config
	var level, only string
	flag.StringVar(&cfg.APIServer, "apiserver", client.ServerFromEnv(), "URL of the apiserver")
	var kubeconfig string
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with the apiserver and this component's credentials (its server wins over --apiserver unless that is given)")
	flag.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod,
		"how long a node may go without a heartbeat before it is marked not ready and its pods are moved")
	flag.IntVar(&cfg.Workers, "workers", 4, "workers per controller")
	flag.DurationVar(&cfg.FuncScaleInterval, "func-scale-interval", functions.DefaultScaleInterval,
		"how often idle functions' counters are lowered by one")
	flag.DurationVar(&cfg.FuncIdleWindow, "func-idle-window", functions.DefaultIdleWindow,
		"how long without a call makes a function idle")
	flag.IntVar(&cfg.FuncInstanceBudget, "funcinstance-budget", funcinstancegc.DefaultBudget,
		"how many finished function instances (call records) are kept across the cluster; older ones are deleted")
	flag.StringVar(&only, "controllers", "", "comma-separated controllers to run (default all: "+controller.Names()+")")
	flag.StringVar(&level, "log-level", "info", "log level (debug, info, warn, error)")
	flag.Parse()
	if kubeconfig != "" {
		c, err := client.FromFlags(flag.CommandLine, cfg.APIServer, kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "controller:", err)
			os.Exit(1)
		}
		cfg.Client = c
	}

	l, err := log.ParseLevel(level)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	log.SetLevel(l)
	if only != "" {
		cfg.Controllers = strings.Split(only, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := controller.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}
