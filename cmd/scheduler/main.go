// Command scheduler binds unscheduled pods to nodes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"minik8s/pkg/cli/flags"
	"minik8s/pkg/client"
	"minik8s/scheduler"
)

func main() {
	var cfg scheduler.Config
	var level, kubeconfig string
	fs := flag.CommandLine
	flags.Client(fs, &cfg.APIServer, client.ServerFromEnv(), &kubeconfig)
	flags.SchedulerPolicy(fs, &cfg.Policy, scheduler.PolicyLeastAllocated, scheduler.PolicyLeastAllocated, scheduler.PolicyRoundRobin)
	fs.StringVar(&cfg.Name, "scheduler-name", scheduler.DefaultSchedulerName, "spec.schedulerName of the pods this scheduler places (the apiserver writes default-scheduler in a pod that names none)")
	fs.IntVar(&cfg.BindWorkers, "bind-workers", 16, "bindings in flight at once")
	flags.LogLevel(fs, &level, "info")
	flag.Parse()
	if kubeconfig != "" {
		c, err := client.FromFlags(fs, cfg.APIServer, kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "scheduler:", err)
			os.Exit(1)
		}
		cfg.Client = c
	}

	if err := flags.SetLogLevel(level); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
	if _, err := scheduler.NewPolicy(cfg.Policy); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler: --policy:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := scheduler.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}
