package test

import (
	"fmt"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// preemptionManifest is a PriorityClass, a Deployment filling a node at
// the default priority, and a pod of the class, as Kubernetes'
// documentation writes them.
const preemptionManifest = `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high-priority
value: 1000000
globalDefault: false
description: "For pods that must run even if others have to go."
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: filler
spec:
  replicas: 2
  selector:
    matchLabels: {app: filler}
  template:
    metadata:
      labels: {app: filler}
    spec:
      containers:
      - name: c
        image: nginx
        resources:
          requests: {cpu: 400m}
`

const urgentPod = `apiVersion: v1
kind: Pod
metadata:
  name: urgent
spec:
  priorityClassName: high-priority
  containers:
  - name: c
    image: nginx
    resources:
      requests: {cpu: 500m}
`

// TestPreemptionWithKubectl: with stock kubectl, a pod of a higher
// PriorityClass that fits nowhere takes the room of one pod of lower
// priority (the fewest), which is deleted and said to be preempted; the
// preempted pod's replacement, of no higher priority, waits and preempts
// nothing.
func TestPreemptionWithKubectl(t *testing.T) {
	t.Parallel()
	cl := startSimCluster(t)
	srv, ctx := cl.srv, cl.ctx
	cl.nodes.add(ctx, "pre-a", "1", "4Gi", nil)
	write := func(name, body string) string { return writeManifest(t, name, body) }
	mustKubectl(t, srv, "priorityclass.scheduling.k8s.io/high-priority created", "apply", "-f", write("filler.yaml", preemptionManifest))
	mustKubectl(t, srv, "high-priority", "get", "priorityclasses")
	filler := func() (running, pending []string) {
		pods, _, err := srv.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=filler"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Spec.NodeName != "":
				running = append(running, p.Name)
			default:
				pending = append(pending, p.Name)
			}
		}
		return running, pending
	}
	eventually(t, 30*time.Second, "both filler pods on pre-a", func() (bool, string) {
		running, _ := filler()
		return len(running) == 2, fmt.Sprint(running)
	})
	before, _ := filler()

	mustKubectl(t, srv, "pod/urgent created", "apply", "-f", write("urgent.yaml", urgentPod))
	eventually(t, 30*time.Second, "urgent bound to pre-a", func() (bool, string) {
		p, err := srv.Client.Pods("default").Get(ctx, "urgent")
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == "pre-a" && p.Status.Phase == api.PodRunning, fmt.Sprintf("node %q nominated %q %s", p.Spec.NodeName, p.Status.NominatedNodeName, p.Status.Phase)
	})
	urgent, _ := srv.Client.Pods("default").Get(ctx, "urgent")
	if urgent.Spec.Priority == nil || *urgent.Spec.Priority != 1000000 || urgent.Status.NominatedNodeName != "pre-a" {
		t.Errorf("urgent: priority %v, nominated %q; want 1000000 and pre-a", urgent.Spec.Priority, urgent.Status.NominatedNodeName)
	}
	eventually(t, 30*time.Second, "one filler pod preempted, its replacement waiting", func() (bool, string) {
		running, pending := filler()
		return len(running) == 1 && len(pending) == 1, fmt.Sprint(running, pending)
	})
	running, _ := filler()
	var victim string
	for _, name := range before {
		if name != running[0] {
			victim = name
		}
	}
	mustKubectl(t, srv, "Preempted by default/urgent on node pre-a", "get", "events", "--field-selector", "involvedObject.name="+victim)
	// The replacement, of the same priority as the pod left, preempts
	// nothing: once the scheduler has found it fits nowhere (the status
	// that would nominate a node if it preempted), no node is nominated.
	_, pending := filler()
	eventually(t, 30*time.Second, "the replacement found unschedulable", func() (bool, string) {
		p, err := srv.Client.Pods("default").Get(ctx, pending[0])
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == api.PodScheduled && c.Reason == "Unschedulable" {
				if p.Status.NominatedNodeName != "" {
					t.Errorf("the replacement preempted: nominated to %q", p.Status.NominatedNodeName)
				}
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", p.Status)
	})
	if again, _ := filler(); len(again) != 1 || again[0] != running[0] {
		t.Errorf("filler pods running %v after the preemption, want %v", again, running)
	}
}
