package pod

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"minik8s/kubelet/network"
	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
)

// fakeNetwork gives each pod a namespace path and an address; it fails the
// first set ups it is told to.
type fakeNetwork struct {
	failures int
	setUps   []string
	downs    []string
}

func (f *fakeNetwork) SetUp(_ context.Context, p network.Pod) (string, string, error) {
	if f.failures > 0 {
		f.failures--
		return "", "", errors.New("no address left")
	}
	f.setUps = append(f.setUps, p.UID)
	return "/run/test-netns/" + p.UID, "10.42.7.9", nil
}

func (f *fakeNetwork) TearDown(_ context.Context, p network.Pod) error {
	f.downs = append(f.downs, p.UID)
	return nil
}

// TestWorkerGivesPodsTheirNetwork: a pod gets its namespace before its
// containers, which join it; its status, env and probes use its own
// address; its ports are inside it; a failed set up is retried with the
// containers waiting; the namespace goes after the containers.
func TestWorkerGivesPodsTheirNetwork(t *testing.T) {
	ctx := context.Background()
	p := testPod(nil)
	p.Spec.Containers[0].Ports = []api.ContainerPort{{ContainerPort: 80}}
	net := &fakeNetwork{failures: 1}
	rt := &fakeRuntime{status: map[string]containerd.Status{}}
	fa := &fakeAPI{}
	cfg := &Config{NodeName: "n", NodeIP: "10.99.0.1", RootDir: t.TempDir(), BackoffBase: time.Hour, BackoffMax: 2 * time.Hour, Network: net}
	w := NewWorker(cfg, rt, fa, NewPorts("127.0.0.1", 0, 0), p, nil)

	w.sync(ctx)
	if len(rt.created) != 0 {
		t.Fatalf("containers created without the pod's network: %v", rt.created)
	}
	if ws := fa.last.Status.ContainerStatuses[0].State.Waiting; ws == nil || ws.Reason != "ContainerCreating" || !strings.Contains(ws.Message, "no address left") {
		t.Fatalf("waiting %+v, want ContainerCreating saying why", ws)
	}
	w.sync(ctx)
	if len(rt.created) != 1 || !slices.Equal(net.setUps, []string{"uid-1"}) {
		t.Fatalf("created %v after set ups %v", rt.created, net.setUps)
	}
	spec := rt.specs[0]
	if spec.NetNSPath != "/run/test-netns/uid-1" || !slices.Contains(spec.Env, "POD_IP=10.42.7.9") || !slices.Contains(spec.Env, "PORT=80") {
		t.Errorf("container spec: netns %q env %v", spec.NetNSPath, spec.Env)
	}
	st := fa.last.Status
	if st.PodIP != "10.42.7.9" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "10.42.7.9" || st.HostIP != "10.99.0.1" {
		t.Errorf("status: podIP %s podIPs %v hostIP %s", st.PodIP, st.PodIPs, st.HostIP)
	}
	if ports := st.ContainerStatuses[0].Ports; len(ports) != 1 || ports[0].ContainerPort != 80 || ports[0].HostPort != 0 {
		t.Errorf("ports %+v: port 80 inside the pod, none on the node", ports)
	}
	w.Gone()
	if !w.sync(ctx) {
		t.Fatal("the pod was not removed")
	}
	if !slices.Equal(net.downs, []string{"uid-1"}) || len(rt.status) != 0 {
		t.Errorf("tear downs %v with containers %v left", net.downs, rt.status)
	}
}

// TestHostNetworkPodKeepsTheNodes: hostNetwork pods get no namespace.
func TestHostNetworkPodKeepsTheNodes(t *testing.T) {
	p := testPod(nil)
	p.Spec.HostNetwork = true
	net := &fakeNetwork{}
	rt := &fakeRuntime{status: map[string]containerd.Status{}}
	fa := &fakeAPI{}
	cfg := &Config{NodeName: "n", NodeIP: "10.99.0.1", RootDir: t.TempDir(), BackoffBase: time.Hour, BackoffMax: 2 * time.Hour, Network: net}
	w := NewWorker(cfg, rt, fa, NewPorts("127.0.0.1", 0, 0), p, nil)
	w.sync(context.Background())
	if len(net.setUps) != 0 || rt.specs[0].NetNSPath != "" || fa.last.Status.PodIP != "10.99.0.1" {
		t.Errorf("set ups %v, netns %q, podIP %s", net.setUps, rt.specs[0].NetNSPath, fa.last.Status.PodIP)
	}
	w.Gone()
	w.sync(context.Background())
	if len(net.downs) != 0 {
		t.Errorf("tore down %v", net.downs)
	}
}
