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

	"minik8s/controller"
	"minik8s/controller/funcinstancegc"
	"minik8s/controller/functions"
	"minik8s/controller/nodelifecycle"
	"minik8s/controller/warmpool"
	"minik8s/pkg/cli/flags"
	"minik8s/pkg/client"
)

func main() {
	var cfg controller.Config
	var level, only, kubeconfig string
	fs := flag.CommandLine
	flags.Client(fs, &cfg.APIServer, client.ServerFromEnv(), &kubeconfig)
	fs.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod,
		"how long a node may go without a heartbeat before it is marked not ready and its pods are moved")
	fs.IntVar(&cfg.Workers, "workers", 4, "workers per controller")
	flags.FuncScaling(fs, &cfg.FuncScaleInterval, functions.DefaultScaleInterval, &cfg.FuncIdleWindow, functions.DefaultIdleWindow)
	flags.FuncInstanceBudget(fs, &cfg.FuncInstanceBudget, funcinstancegc.DefaultBudget)
	flags.WarmPoolSize(fs, &cfg.WarmPoolSize, warmpool.DefaultSize)
	fs.StringVar(&only, "controllers", "", "comma-separated controllers to run (default all: "+controller.Names()+")")
	flags.LogLevel(fs, &level, "info")
	flag.Parse()
	if kubeconfig != "" {
		c, err := client.FromFlags(fs, cfg.APIServer, kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "controller:", err)
			os.Exit(1)
		}
		cfg.Client = c
	}

	if err := flags.SetLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
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
