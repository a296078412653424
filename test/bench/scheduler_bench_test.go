package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

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
// the watch has seen every pod bound. The preferences run has nodes in
// four zones, a third tainted NoSchedule and a third PreferNoSchedule, and
// pods tolerating the NoSchedule taint, requiring two zones and
// preferring one of them and a disk label.
func BenchmarkSchedulerThroughput(b *testing.B) {
	for _, policy := range []string{scheduler.PolicyLeastAllocated, scheduler.PolicyRoundRobin} {
		b.Run(policy, func(b *testing.B) { benchScheduler(b, policy, false) })
	}
	b.Run("least-allocated-with-preferences", func(b *testing.B) { benchScheduler(b, scheduler.PolicyLeastAllocated, true) })
}

// nodePreferences and podPreferences make the preferences run's node i
// and pods.
func nodePreferences(n *api.Node, i int) {
	n.Labels = map[string]string{"zone": fmt.Sprintf("z%d", i%4)}
	if i%2 == 0 {
		n.Labels["disk"] = "ssd"
	}
	switch i % 3 {
	case 0:
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	case 1:
		n.Spec.Taints = []corev1.Taint{{Key: "noisy", Effect: corev1.TaintEffectPreferNoSchedule}}
	}
}

func podPreferences(p *api.Pod) {
	in := func(k string, v ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: v}}}
	}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{in("zone", "z0", "z1")}},
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: 50, Preference: in("zone", "z1")}, {Weight: 10, Preference: in("disk", "ssd")}},
	}}
}

func benchScheduler(b *testing.B, policy string, preferences bool) {
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
		if preferences {
			nodePreferences(n, i)
		}
		if _, err := c.Nodes().Create(ctx, n); err != nil {
			b.Fatal(err)
		}
	}

	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := fmt.Sprintf("bench-%d", i)
		if _, err := c.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		createPods(b, ctx, c, ns, preferences)
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
func createPods(b *testing.B, ctx context.Context, c *client.Client, ns string, preferences bool) {
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
				if preferences {
					podPreferences(p)
				}
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
