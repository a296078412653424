// Command mkctl is the kubectl-like command line of minik8s.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"minik8s/mkctl"
)

func main() {
	// Ctrl-C ends a watch (get -w) cleanly, with exit code 0.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mkctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
