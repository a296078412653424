package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/scheduler"
	"minik8s/test/framework"
)

const (
	benchNodes = 100
	benchPods  = 1000
)

// BenchmarkSchedulerThroughput measures pods bound per second: 100
// registered nodes (no kubelets), 1000 pending pods with requests, one
// scheduler started on the backlog; the clock runs from its start until
// the watch has seen every pod bound.
func BenchmarkSchedulerThroughput(b *testing.B) {
	for _, policy := range []string{scheduler.PolicyLeastAllocated, scheduler.PolicyRoundRobin} {
		b.Run(policy, func(b *testing.B) { benchScheduler(b, policy) })
	}
}

func benchScheduler(b *testing.B, policy string) {
	level := log.GetLevel()
	log.SetLevel(log.WarnLevel)
	defer log.SetLevel(level)
	srv := framework.StartAPIServer(b)
	ctx := context.Background()
	c := srv.Client
	now := time.Now().UTC()
	for i := 0; i < benchNodes; i++ {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("node-%03d", i)},
			Status: api.NodeStatus{
				Capacity: api.ResourceList{api.ResourceCPU: "64", api.ResourceMemory: "256Gi", api.ResourcePods: "1000"},
				Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue,
					LastHeartbeatTime: &now, LastTransitionTime: &now}},
			}}
		if _, err := c.Nodes().Create(ctx, n); err != nil {
			b.Fatal(err)
		}
	}

	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := fmt.Sprintf("bench-%d", i)
		createPods(b, ctx, c, ns)
		done := watchBound(ctx, c, ns)
		sctx, cancel := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() {
			stopped <- scheduler.Run(sctx, scheduler.Config{Client: c, Policy: policy})
		}()
		select {
		case <-done:
		case err := <-stopped:
			b.Fatalf("scheduler stopped: %v", err)
		case <-time.After(10 * time.Minute):
			b.Fatal("pods not all bound within 10 minutes")
		}
		total += time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-stopped; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchPods)/total.Seconds(), "pods/s")
	b.ReportMetric(0, "ns/op")
}

// createPods creates the pending pods, eight at a time.
func createPods(b *testing.B, ctx context.Context, c *client.Client, ns string) {
	b.Helper()
	pods := c.Pods(ns)
	work := make(chan int)
	errs := make(chan error, benchPods)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("p-%04d", i)},
					Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "busybox",
						Resources: api.ResourceRequirements{Requests: api.ResourceList{api.ResourceCPU: "100m", api.ResourceMemory: "64Mi"}}}}}}
				if _, err := pods.Create(ctx, p); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 0; i < benchPods; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// watchBound closes the returned channel once every pod of ns is bound.
func watchBound(ctx context.Context, c *client.Client, ns string) <-chan struct{} {
	done := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	events := c.Pods(ns).Watch(wctx, client.ListOptions{})
	go func() {
		defer cancel()
		bound := map[string]bool{}
		for ev := range events {
			if ev.Object.Spec.NodeName != "" {
				bound[ev.Object.Name] = true
			}
			if len(bound) == benchPods {
				close(done)
				return
			}
		}
	}()
	return done
}
