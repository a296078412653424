package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

func TestKubeletRestartAdoptsAndCleansUp(t *testing.T) {
	n := startNode(t, "node-k", "127.0.0.15")
	ctx := context.Background()
	for _, name := range []string{"keep", "gone", "marked"} {
		p := pythonPod(name, n.name, httpServer)
		g := int64(2)
		p.Spec.TerminationGracePeriodSeconds = &g
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]*api.Pod{}
	for _, name := range []string{"keep", "gone", "marked"} {
		before[name] = waitPod(t, n.c, name, 60*time.Second, "Running and Ready", func(p *api.Pod) bool {
			return p.Status.Phase == api.PodRunning && podReady(p)
		})
	}

	n.kubelet.Stop()
	// While the kubelet is down: one pod is force-deleted (its object goes
	// at once), another is deleted gracefully (only marked).
	zero := int64(0)
	if _, err := n.c.Pods("default").Delete(ctx, "gone", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.c.Pods("default").Delete(ctx, "marked", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n.kubelet.Start()

	waitGone(t, n.c, "marked", 60*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for {
		cs := nodeContainers(t, n.ctd.Runtime, n.name)
		if len(cs) == 1 {
			if cs[0].Labels["minik8s.io/pod-name"] != "keep" {
				t.Fatalf("the container left is %v", cs[0].Labels)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers after restart: %v", cs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The running pod was adopted: same container, no restart, still served.
	time.Sleep(3 * time.Second)
	p, err := n.c.Pods("default").Get(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	was, now := before["keep"].Status.ContainerStatuses[0], p.Status.ContainerStatuses[0]
	if now.ContainerID != was.ContainerID || now.RestartCount != 0 || now.State.Running == nil {
		t.Errorf("after restart: %s (was %s)", statusString(p), was.ContainerID)
	}
	if !podReady(p) {
		t.Errorf("adopted pod not ready: %s", statusString(p))
	}
	if now.Ports[0].ContainerPort != was.Ports[0].ContainerPort {
		t.Errorf("port changed from %d to %d", was.Ports[0].ContainerPort, now.Ports[0].ContainerPort)
	}
}

func TestKubeletsShareOneContainerd(t *testing.T) {
	ctd := framework.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	as := framework.StartAPIServer(t)
	ka := framework.StartKubelet(t, as.URL, ctd, "share-a", "127.0.0.16")
	kb := framework.StartKubelet(t, as.URL, ctd, "share-b", "127.0.0.17")
	ctx := context.Background()
	for _, pn := range [][2]string{{"on-a", "share-a"}, {"on-b", "share-b"}} {
		if _, err := as.Client.Pods("default").Create(ctx, pythonPod(pn[0], pn[1], httpServer)); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]string{}
	for _, name := range []string{"on-a", "on-b"} {
		p := waitPod(t, as.Client, name, 60*time.Second, "Running", func(p *api.Pod) bool {
			return p.Status.Phase == api.PodRunning && p.Status.ContainerStatuses[0].State.Running != nil
		})
		ids[name] = p.Status.ContainerStatuses[0].ContainerID
	}
	a := waitPod(t, as.Client, "on-a", 10*time.Second, "on node a's address", func(p *api.Pod) bool { return true })
	if a.Status.PodIP != "127.0.0.16" {
		t.Errorf("pod on a has podIP %s", a.Status.PodIP)
	}
	// Kubelet a goes away and its pod is force-deleted; kubelet b restarts
	// and sweeps: it must not touch a's container.
	ka.Stop()
	kb.Restart()
	time.Sleep(3 * time.Second)
	if got := nodeContainers(t, ctd.Runtime, "share-a"); len(got) != 1 || "containerd://"+got[0].ID != ids["on-a"] {
		t.Errorf("node a's containers after b's restart: %v", got)
	}
	b, _ := as.Client.Pods("default").Get(ctx, "on-b")
	if b.Status.ContainerStatuses[0].ContainerID != ids["on-b"] {
		t.Errorf("node b's pod was not adopted: %s", statusString(b))
	}
	// Back, kubelet a still finds its own.
	ka.Start()
	time.Sleep(3 * time.Second)
	p, _ := as.Client.Pods("default").Get(ctx, "on-a")
	if p.Status.ContainerStatuses[0].ContainerID != ids["on-a"] || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("node a's pod after its kubelet came back: %s", statusString(p))
	}
	if !strings.HasPrefix(ids["on-a"], "containerd://") {
		t.Errorf("container id %q", ids["on-a"])
	}
}
