package test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/scheduler"
	"minik8s/test/framework"
)

// simCluster is an apiserver with simulated nodes (scheduler_test.go),
// the scheduler and the controllers: enough for what kubectl does to
// placement, without containers.
type simCluster struct {
	srv   *framework.APIServer
	ctx   context.Context
	nodes *simNodes
}

func startSimCluster(t *testing.T) *simCluster {
	t.Helper()
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nodes := startSimNodes(ctx, t, srv.Client, time.Second)
	startScheduler(ctx, t, scheduler.Config{Client: srv.Client})
	framework.StartControllers(t, srv, controller.Config{})
	return &simCluster{srv: srv, ctx: ctx, nodes: nodes}
}

// writeManifest writes body to a file of the test's, named name.
func writeManifest(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
