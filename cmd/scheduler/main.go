// Command scheduler binds unscheduled pods to nodes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/client"
	"minik8s/scheduler"
)

func main() {
	var cfg scheduler.Config
	var level string
	flag.StringVar(&cfg.APIServer, "apiserver", client.ServerFromEnv(), "URL of the apiserver")
	var kubeconfig string
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with the apiserver and this component's credentials (its server wins over --apiserver unless that is given)")
	flag.StringVar(&cfg.Policy, "policy", scheduler.PolicyLeastAllocated,
		"how to choose among the nodes a pod fits on: "+scheduler.PolicyLeastAllocated+" or "+scheduler.PolicyRoundRobin)
	flag.StringVar(&cfg.Name, "scheduler-name", scheduler.DefaultSchedulerName, "spec.schedulerName of the pods this scheduler places (besides empty)")
	flag.IntVar(&cfg.BindWorkers, "bind-workers", 16, "bindings in flight at once")
	flag.StringVar(&level, "log-level", "info", "log level (debug, info, warn, error)")
	flag.Parse()
	if kubeconfig != "" {
		c, err := client.FromFlags(flag.CommandLine, cfg.APIServer, kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "scheduler:", err)
			os.Exit(1)
		}
		cfg.Client = c
	}

	l, err := log.ParseLevel(level)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
	log.SetLevel(l)
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
