package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// TestEventsInDescribe: the scheduler, the ReplicaSet controller and the
// kubelet record what they do as Events, which `kubectl describe` and
// `mkctl describe` show under the object, and `kubectl get events` lists;
// a crashing container's back-offs fold into one event whose count grows.
func TestEventsInDescribe(t *testing.T) {
	t.Parallel()
	cl := framework.StartCluster(t, controller.Config{}, "evnode", 1, 80)
	s := cl.APIServer
	cl.Containerd.ImportPythonRuntime(t)
	ctx := context.Background()
	one := int32(1)
	rs := &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "ev"},
		Spec: api.ReplicaSetSpec{Replicas: &one, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "ev"}},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "ev"}},
				Spec: pythonPod("", "", "import time\ntime.sleep(3600)\n").Spec}}}
	if _, err := s.Client.ReplicaSets("default").Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	var pod string
	waitUntil(t, time.Minute, "the ReplicaSet's pod running", func() bool {
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=ev"})
		if err != nil || len(pods) != 1 || pods[0].Status.Phase != api.PodRunning {
			return false
		}
		pod = pods[0].Name
		return true
	})
	var out string
	waitUntil(t, 30*time.Second, "kubectl describe pod listing its events", func() bool {
		out, _, _ = kubectl(t, s, "describe", "pod", pod)
		return strings.Contains(out, "Started")
	})
	for _, want := range []string{"Events:", "Scheduled", "default-scheduler", "Successfully assigned default/" + pod + " to evnode-1",
		"Pulled", "Created", "Started", "kubelet"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe pod lacks %q:\n%s", want, out)
		}
	}
	if out, errOut, err := kubectl(t, s, "describe", "rs", "ev"); err != nil || !strings.Contains(out, "SuccessfulCreate") || !strings.Contains(out, "Created pod: "+pod) {
		t.Errorf("kubectl describe rs: %v\n%s%s", err, out, errOut)
	}
	if out := mustMkctl(t, s, "describe", "pod", pod); !strings.Contains(out, "Events:") || !strings.Contains(out, "Started container main") {
		t.Errorf("mkctl describe pod:\n%s", out)
	}
	if out, errOut, err := kubectl(t, s, "get", "events"); err != nil || !strings.Contains(out, "LAST SEEN") || !strings.Contains(out, "pod/"+pod) {
		t.Errorf("kubectl get events: %v\n%s%s", err, out, errOut)
	}

	// A container that keeps crashing: one BackOff event, counted.
	crash := pythonPod("crasher", "evnode-1", "import sys\nsys.exit(1)\n")
	if _, err := s.Client.Pods("default").Create(ctx, crash); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, "the crasher's BackOff event counted more than once", func() bool {
		evs, _, err := s.Client.Events("default").List(ctx, client.ListOptions{FieldSelector: "involvedObject.name=crasher"})
		if err != nil {
			return false
		}
		backoffs := 0
		for _, e := range evs {
			if e.Reason == "BackOff" {
				backoffs++
				if e.Count < 2 {
					return false
				}
			}
		}
		return backoffs == 1
	})
}
