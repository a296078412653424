package bench

import (
	"context"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// BenchmarkDaemonSetVsDeployment measures, side by side in one run, the
// time from creating a DaemonSet to its pods Running on three nodes (each
// in its own network namespace of an underlay, pods on their own network)
// and from creating a 3-replica Deployment of the same template to its
// three pods Running; the two take turns, each deleted and its pods gone
// before the next. b.N is the number of turns (at least 5).
func BenchmarkDaemonSetVsDeployment(b *testing.B) {
	ctx := context.Background()
	u := framework.StartUnderlay(b, 3)
	as := u.StartAPIServer(b, nil)
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	for i, name := range []string{"w-1", "w-2", "w-3"} {
		framework.StartNetKubelet(b, u.Nodes[i], as, ctd, name)
	}
	framework.StartControllers(b, as, controller.Config{})
	framework.StartScheduler(b, as, scheduler.Config{})
	c := as.Client
	labels := map[string]string{"app": "bench"}
	zero, three := int64(0), int32(3)
	tmpl := api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: labels}, Spec: api.PodSpec{TerminationGracePeriodSeconds: &zero,
		Containers: []api.Container{{Name: "c", Image: containerdtest.PythonRuntimeImage, Command: []string{"sleep", "3600"}}}}}
	sel := &api.LabelSelector{MatchLabels: labels}
	running := func(start time.Time) time.Duration {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			pods, _, err := c.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=bench"})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, p := range pods {
				if p.Status.Phase == api.PodRunning && p.DeletionTimestamp == nil {
					n++
				}
			}
			if n == 3 {
				return time.Since(start)
			}
		}
		b.Fatal("three pods did not run within 2m")
		return 0
	}
	gone := func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			pods, _, err := c.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=bench"})
			if err == nil && len(pods) == 0 {
				return
			}
		}
		b.Fatal("the pods were not gone within 2m")
	}
	var ds, dep []time.Duration
	n := max(b.N, 5)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		for _, kind := range []string{"daemonset", "deployment"} {
			start := time.Now()
			var err error
			if kind == "daemonset" {
				_, err = c.DaemonSets("default").Create(ctx, &api.DaemonSet{ObjectMeta: api.ObjectMeta{Name: "bench"},
					Spec: api.DaemonSetSpec{Selector: sel, Template: tmpl}})
			} else {
				_, err = c.Deployments("default").Create(ctx, &api.Deployment{ObjectMeta: api.ObjectMeta{Name: "bench"},
					Spec: api.DeploymentSpec{Replicas: &three, Selector: sel, Template: tmpl}})
			}
			if err != nil {
				b.Fatal(err)
			}
			took := running(start)
			b.StopTimer()
			if kind == "daemonset" {
				ds = append(ds, took)
				_, err = c.DaemonSets("default").Delete(ctx, "bench", client.DeleteOptions{})
			} else {
				dep = append(dep, took)
				_, err = c.Deployments("default").Delete(ctx, "bench", client.DeleteOptions{})
			}
			if err != nil {
				b.Fatal(err)
			}
			gone()
			b.StartTimer()
		}
	}
	b.StopTimer()
	d, p := percentile(ds, 50), percentile(dep, 50)
	b.ReportMetric(d, "daemonset-running-p50-ms")
	b.ReportMetric(p, "deployment-running-p50-ms")
	b.ReportMetric(d/p, "daemonset-vs-deployment-ratio")
}
