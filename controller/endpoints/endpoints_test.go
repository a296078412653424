package endpoints

import (
	"encoding/json"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
)

type podOpt func(*api.Pod)

func named(name string, spec int32, status int32) podOpt {
	return func(p *api.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, api.ContainerPort{Name: name, ContainerPort: spec})
		if status != 0 {
			p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "c", Ports: []api.ContainerPort{{Name: name, ContainerPort: status}}}}
		}
	}
}

func notReady(p *api.Pod) { p.Status.Conditions[0].Status = api.ConditionFalse }
func noIP(p *api.Pod)     { p.Status.PodIP = "" }
func deleting(p *api.Pod) { now := time.Now(); p.DeletionTimestamp = &now }
func failed(p *api.Pod)   { p.Status.Phase = api.PodFailed }

func testPod(name, ip string, opts ...podOpt) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name},
		Spec: api.PodSpec{NodeName: "node-" + name, Containers: []api.Container{{Name: "c", Image: "i"}}},
		Status: api.PodStatus{Phase: api.PodRunning, PodIP: ip,
			Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestTargetPort(t *testing.T) {
	tests := []struct {
		name   string
		target string
		pod    *api.Pod
		want   int32
		ok     bool
	}{
		{"number as is", "8080", testPod("p", "127.0.0.11"), 8080, true},
		{"empty is the service port", "", testPod("p", "127.0.0.11"), 80, true},
		{"name from allocated status port", "http", testPod("p", "127.0.0.11", named("http", 0, 31234)), 31234, true},
		{"status wins over spec", "http", testPod("p", "127.0.0.11", named("http", 9000, 31234)), 31234, true},
		{"name from spec when status has none", "http", testPod("p", "127.0.0.11", named("http", 9000, 0)), 9000, true},
		{"name not allocated yet", "http", testPod("p", "127.0.0.11", named("http", 0, 0)), 0, false},
		{"unknown name", "grpc", testPod("p", "127.0.0.11", named("http", 9000, 0)), 0, false},
		{"number out of range", "70000", testPod("p", "127.0.0.11"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := TargetPort(api.ServicePort{Port: 80, TargetPort: api.IntOrString(tt.target)}, tt.pod)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("TargetPort = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSubsets(t *testing.T) {
	svc := &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []api.ServicePort{
			{Name: "http", Port: 80, TargetPort: "http", Protocol: "TCP"},
			{Name: "admin", Port: 9090, TargetPort: "9090"},
		}}}
	pods := []*api.Pod{
		testPod("b", "127.0.0.12", named("http", 0, 30002)),
		testPod("a", "127.0.0.11", named("http", 0, 30001)),
		testPod("c", "127.0.0.13", named("http", 0, 30003), notReady),
		testPod("d", "", named("http", 0, 30004)),
		testPod("e", "127.0.0.15", named("http", 0, 30005), deleting),
		testPod("f", "127.0.0.16", named("http", 0, 30006), failed),
		testPod("g", "127.0.0.17"), // no port named http: only on the numeric port
	}
	got := Subsets(svc, pods)
	addr := func(name, ip string, port int32) api.EndpointAddress {
		return api.EndpointAddress{IP: ip, Port: port, NodeName: "node-" + name,
			TargetRef: &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: "uid-" + name}}
	}
	want := []api.EndpointSubset{
		{
			Addresses:         []api.EndpointAddress{addr("a", "127.0.0.11", 30001), addr("b", "127.0.0.12", 30002)},
			NotReadyAddresses: []api.EndpointAddress{addr("c", "127.0.0.13", 30003)},
			Ports:             []api.EndpointPort{{Name: "http", Port: 80, Protocol: "TCP"}},
		},
		{
			Addresses: []api.EndpointAddress{addr("a", "127.0.0.11", 9090), addr("b", "127.0.0.12", 9090),
				addr("g", "127.0.0.17", 9090)},
			NotReadyAddresses: []api.EndpointAddress{addr("c", "127.0.0.13", 9090)},
			Ports:             []api.EndpointPort{{Name: "admin", Port: 9090, Protocol: "TCP"}},
		},
	}
	if !cache.Equal(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("subsets:\n%s\nwant:\n%s", g, w)
	}
	if s := Subsets(svc, nil); s != nil {
		t.Fatalf("no pods: subsets %+v, want none", s)
	}

	// Published, the pod not ready is listed as ready; a pod whose
	// subdomain is the Service has its hostname in its address.
	svc.Spec.PublishNotReadyAddresses = true
	named := testPod("h", "127.0.0.18", named("http", 0, 30008), notReady)
	named.Spec.Hostname, named.Spec.Subdomain = "web-0", "web"
	got = Subsets(svc, []*api.Pod{named})
	if len(got) != 2 || len(got[0].Addresses) != 1 || got[0].NotReadyAddresses != nil || got[0].Addresses[0].Hostname != "web-0" {
		t.Fatalf("published subsets %+v", got)
	}
}
