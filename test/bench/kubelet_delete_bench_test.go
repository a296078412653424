package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/containerd"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// termServer is benchServer exiting on SIGTERM: as a container's PID 1,
// python would otherwise ignore it and wait for the SIGKILL.
const termServer = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n" + benchServer

// BenchmarkKubeletPodDelete measures, over at least 10 pods, the time from
// deleting a Ready pod with a grace period of 5s to its containers being
// removed from containerd, and to the pod object being gone from the
// apiserver (the kubelet removes it once the containers are). The pods
// stop on SIGTERM, so the figures are the kubelet's own latency, well
// under the grace period. Pods are deleted one after another on one
// kubelet with containerd.
func BenchmarkKubeletPodDelete(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	as := framework.StartAPIServer(b)
	framework.StartKubelet(b, as.URL, ctd, "bench-node", "127.0.0.19")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := as.Client.Pods("default")
	events := pods.Watch(ctx, client.ListOptions{})

	n := max(b.N, 10)
	var containersGone, objectGone []time.Duration
	b.ResetTimer()
	for i := 0; i < n; i++ {
		b.StopTimer()
		name := fmt.Sprintf("del-%d-%d", b.N, i)
		p := &api.Pod{
			TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
			Spec: api.PodSpec{
				NodeName: "bench-node",
				Containers: []api.Container{{
					Name: "web", Image: containerdtest.PythonRuntimeImage,
					Command:        []string{"python3", "-c", termServer},
					Ports:          []api.ContainerPort{{Name: "http"}},
					ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "http"}, PeriodSeconds: 1},
				}},
			},
		}
		created, err := pods.Create(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		// Ready: serving, so its SIGTERM handler is in place (until then
		// python, as PID 1, would ignore the signal).
		awaitPodEvent(b, events, name, 2*time.Minute, "Ready", func(ev client.Event[*api.Pod]) bool {
			if ev.Type == api.Deleted {
				return false
			}
			for _, c := range ev.Object.Status.Conditions {
				if c.Type == api.PodReady && c.Status == api.ConditionTrue {
					return true
				}
			}
			return false
		})
		if cs := containersOfPod(b, ctd.Runtime, created.UID); len(cs) == 0 {
			b.Fatalf("pod %s is Ready without a container", name)
		}

		b.StartTimer()
		grace := int64(5)
		t0 := time.Now()
		if _, err := pods.Delete(ctx, name, client.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			b.Fatal(err)
		}
		var tContainers, tObject time.Duration
		poll := time.NewTicker(10 * time.Millisecond)
		timeout := time.After(2 * time.Minute)
		for tContainers == 0 || tObject == 0 {
			select {
			case ev, ok := <-events:
				if !ok {
					b.Fatal("watch ended")
				}
				if ev.Object.Name == name && ev.Type == api.Deleted && tObject == 0 {
					tObject = time.Since(t0)
				}
			case <-poll.C:
				if tContainers == 0 && len(containersOfPod(b, ctd.Runtime, created.UID)) == 0 {
					tContainers = time.Since(t0)
				}
			case <-timeout:
				b.Fatalf("pod %s not cleaned up 2 minutes after its deletion", name)
			}
		}
		poll.Stop()
		b.StopTimer()
		containersGone = append(containersGone, tContainers)
		objectGone = append(objectGone, tObject)
	}
	b.ReportMetric(percentile(containersGone, 50), "containers-gone-p50-ms")
	b.ReportMetric(percentile(containersGone, 99), "containers-gone-p99-ms")
	b.ReportMetric(percentile(objectGone, 50), "pod-gone-p50-ms")
	b.ReportMetric(percentile(objectGone, 99), "pod-gone-p99-ms")
	b.ReportMetric(float64(len(objectGone)), "pods")
}

// awaitPodEvent reads the pod watch until an event of the named pod satisfies
// cond.
func awaitPodEvent(b *testing.B, events <-chan client.Event[*api.Pod], name string, within time.Duration, what string, cond func(client.Event[*api.Pod]) bool) {
	b.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				b.Fatal("watch ended")
			}
			if ev.Object.Name == name && cond(ev) {
				return
			}
		case <-timeout:
			b.Fatalf("pod %s not %s after %s", name, what, within)
		}
	}
}

// containersOfPod lists the containers of a pod in containerd.
func containersOfPod(b *testing.B, rt *containerd.Runtime, uid string) []containerd.Container {
	b.Helper()
	cs, err := rt.ListContainers(context.Background(), map[string]string{containerd.LabelPodUID: uid})
	if err != nil {
		b.Fatal(err)
	}
	return cs
}
