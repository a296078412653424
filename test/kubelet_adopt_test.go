package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/containerd"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

func TestKubeletRestartAdoptsAndCleansUp(t *testing.T) {
	t.Parallel()
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

// Two kubelets on one containerd: each sweeps only its own orphans. Both
// stop; a pod of each is force-deleted. Kubelet b comes back and removes
// its orphan, and must leave a's (an orphan too, from the apiserver's
// view) running; kubelet a comes back, removes its orphan and adopts the
// pod it still has.
func TestKubeletsShareOneContainerd(t *testing.T) {
	t.Parallel()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	as := framework.StartAPIServer(t)
	ka := framework.StartKubelet(t, as.URL, ctd, "share-a", "127.0.0.16")
	kb := framework.StartKubelet(t, as.URL, ctd, "share-b", "127.0.0.17")
	ctx := context.Background()
	pods := [][2]string{{"on-a", "share-a"}, {"keep-a", "share-a"}, {"on-b", "share-b"}, {"gone-b", "share-b"}}
	for _, pn := range pods {
		if _, err := as.Client.Pods("default").Create(ctx, pythonPod(pn[0], pn[1], httpServer)); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]string{} // pod name -> container id, without the containerd:// prefix
	for _, pn := range pods {
		p := waitPod(t, as.Client, pn[0], 60*time.Second, "Running", func(p *api.Pod) bool {
			return p.Status.Phase == api.PodRunning && len(p.Status.ContainerStatuses) == 1 &&
				p.Status.ContainerStatuses[0].State.Running != nil
		})
		id := p.Status.ContainerStatuses[0].ContainerID
		if !strings.HasPrefix(id, "containerd://") {
			t.Fatalf("pod %s: container id %q", pn[0], id)
		}
		ids[pn[0]] = strings.TrimPrefix(id, "containerd://")
		if pn[0] == "on-a" && p.Status.PodIP != "127.0.0.16" {
			t.Errorf("pod on a has podIP %s", p.Status.PodIP)
		}
	}

	// Both kubelets go away; one pod of each node is force-deleted: its
	// object goes at once and its container is left to its node's sweep.
	ka.Stop()
	kb.Stop()
	zero := int64(0)
	for _, name := range []string{"on-a", "gone-b"} {
		if _, err := as.Client.Pods("default").Delete(ctx, name, client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, as.Client, name, 10*time.Second)
	}
	for _, name := range []string{"on-a", "gone-b"} {
		if st := containerState(t, ctd, ids[name]); st != containerd.StateRunning {
			t.Fatalf("container of %s is %q before any sweep, want running", name, st)
		}
	}

	// Kubelet b restarts and sweeps: its own orphan goes (which shows the
	// sweep ran), a's stays, running.
	kb.Start()
	waitFor(t, "kubelet b to remove the container of its force-deleted pod", 60*time.Second, func() bool {
		return !hasContainer(t, ctd, ids["gone-b"])
	})
	// The sweep at start-up ends before the kubelet follows new pods: once
	// a pod created now runs on b, the whole sweep is behind us.
	if _, err := as.Client.Pods("default").Create(ctx, pythonPod("after-b", "share-b", httpServer)); err != nil {
		t.Fatal(err)
	}
	waitPod(t, as.Client, "after-b", 60*time.Second, "Running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })
	for _, name := range []string{"on-a", "keep-a"} {
		if st := containerState(t, ctd, ids[name]); st != containerd.StateRunning {
			t.Errorf("container of %s (node a) is %q after kubelet b's sweep, want running", name, st)
		}
	}
	waitPod(t, as.Client, "on-b", 30*time.Second, "adopted by kubelet b", func(p *api.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].ContainerID == "containerd://"+ids["on-b"] && cs[0].RestartCount == 0 && cs[0].State.Running != nil
	})

	// Kubelet a comes back: it finds on-a gone and removes its container,
	// and keeps keep-a's.
	ka.Start()
	waitFor(t, "kubelet a to remove the container of its force-deleted pod", 60*time.Second, func() bool {
		return !hasContainer(t, ctd, ids["on-a"])
	})
	if got := nodeContainers(t, ctd.Runtime, "share-a"); len(got) != 1 || got[0].ID != ids["keep-a"] {
		t.Errorf("node a's containers after its kubelet came back: %v, want only keep-a's %s", got, ids["keep-a"])
	}
	waitPod(t, as.Client, "keep-a", 30*time.Second, "adopted by kubelet a", func(p *api.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].ContainerID == "containerd://"+ids["keep-a"] && cs[0].RestartCount == 0 && cs[0].State.Running != nil
	})
	if st := containerState(t, ctd, ids["on-b"]); st != containerd.StateRunning {
		t.Errorf("container of on-b is %q after kubelet a's return, want running", st)
	}
}

// hasContainer reports whether containerd still has the container.
func hasContainer(t *testing.T, ctd *containerdtest.Containerd, id string) bool {
	t.Helper()
	cs, err := ctd.Runtime.ListContainers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == id {
			return true
		}
	}
	return false
}

// containerState is the state of the container's task, "" when the
// container is gone.
func containerState(t *testing.T, ctd *containerdtest.Containerd, id string) containerd.State {
	t.Helper()
	if !hasContainer(t, ctd, id) {
		return ""
	}
	st, err := ctd.Runtime.ContainerStatus(context.Background(), id)
	if err != nil {
		t.Fatalf("status of container %s: %v", id, err)
	}
	return st.State
}
