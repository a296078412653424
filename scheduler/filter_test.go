package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

type nodeOpt func(*api.Node)

func notReady(n *api.Node) { n.Status.Conditions[0].Status = api.ConditionFalse }
func cordoned(n *api.Node) { n.Spec.Unschedulable = true }
func labeled(k, v string) nodeOpt {
	return func(n *api.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[k] = v
	}
}
func maxPods(n string) nodeOpt {
	return func(node *api.Node) { node.Status.Capacity[api.ResourcePods] = n }
}

func testNode(name, cpu, mem string, opts ...nodeOpt) *api.Node {
	n := &api.Node{ObjectMeta: api.ObjectMeta{Name: name},
		Status: api.NodeStatus{
			Capacity:   api.ResourceList{api.ResourceCPU: cpu, api.ResourceMemory: mem},
			Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
		}}
	for _, o := range opts {
		o(n)
	}
	return n
}

type podOpt func(*api.Pod)

func ports(ps ...int32) podOpt {
	return func(p *api.Pod) {
		for _, port := range ps {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, api.ContainerPort{ContainerPort: port})
		}
	}
}
func hostPortOpt(port int32) podOpt {
	return func(p *api.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, api.ContainerPort{ContainerPort: 80, HostPort: port})
	}
}
func selector(k, v string) podOpt {
	return func(p *api.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
}

func testPod(name, cpu, mem string, opts ...podOpt) *api.Pod {
	req := api.ResourceList{}
	if cpu != "" {
		req[api.ResourceCPU] = cpu
	}
	if mem != "" {
		req[api.ResourceMemory] = mem
	}
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i", Resources: api.ResourceRequirements{Requests: req}}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// info makes a nodeInfo with the given pods already placed.
func info(n *api.Node, placed ...*api.Pod) *nodeInfo {
	c := newPodCache()
	for _, p := range placed {
		p.Spec.NodeName = n.Name
		c.setPod(p)
	}
	alloc, mp := allocatable(n)
	return &nodeInfo{node: n, alloc: alloc, maxPods: mp, used: c.usageLocked(n.Name)}
}

// nodeAffinityIn requires a node whose label key is one of values.
func nodeAffinityIn(key string, values ...string) func(*api.Pod) {
	return func(p *api.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}}}}}
	}
}

func tainted(k, v string, effect corev1.TaintEffect) nodeOpt {
	return func(n *api.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Value: v, Effect: effect})
	}
}

func TestFilters(t *testing.T) {
	tests := []struct {
		name   string
		pod    *api.Pod
		node   *nodeInfo
		reason []string
	}{
		{"fits", testPod("p", "500m", "64Mi"), info(testNode("n", "1", "1Gi")), nil},
		{"no requests fit anywhere ready", testPod("p", "", ""), info(testNode("n", "0", "0")), nil},
		{"not ready", testPod("p", "", ""), info(testNode("n", "1", "1Gi", notReady)), []string{reasonNotReady}},
		{"no ready condition", testPod("p", "", ""), info(&api.Node{ObjectMeta: api.ObjectMeta{Name: "n"}}), []string{reasonNotReady}},
		{"unschedulable", testPod("p", "", ""), info(testNode("n", "1", "1Gi", cordoned)), []string{reasonUnschedulable}},
		{"unschedulable tolerated (a DaemonSet's pod)", testPod("p", "", "", func(p *api.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}), info(testNode("n", "1", "1Gi", cordoned)), nil},
		{"unschedulable, another taint tolerated", testPod("p", "", "", func(p *api.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}), info(testNode("n", "1", "1Gi", cordoned)), []string{reasonUnschedulable}},
		{"selector matches", testPod("p", "", "", selector("disk", "ssd")), info(testNode("n", "1", "1Gi", labeled("disk", "ssd"))), nil},
		{"selector value differs", testPod("p", "", "", selector("disk", "ssd")), info(testNode("n", "1", "1Gi", labeled("disk", "hdd"))), []string{reasonNodeSelector}},
		{"selector label missing", testPod("p", "", "", selector("disk", "ssd")), info(testNode("n", "1", "1Gi")), []string{reasonNodeSelector}},
		{"required node affinity matches", testPod("p", "", "", nodeAffinityIn("disk", "ssd", "nvme")), info(testNode("n", "1", "1Gi", labeled("disk", "nvme"))), nil},
		{"required node affinity differs", testPod("p", "", "", nodeAffinityIn("disk", "ssd", "nvme")), info(testNode("n", "1", "1Gi", labeled("disk", "hdd"))), []string{reasonNodeAffinity}},
		{"required node affinity by name", testPod("p", "", "", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}}}}}}
		}), info(testNode("n", "1", "1Gi")), []string{reasonNodeAffinity}},
		{"preferred node affinity only prefers", testPod("p", "", "", func(p *api.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}}}}}}}
		}), info(testNode("n", "1", "1Gi")), nil},
		{"untolerated taint", testPod("p", "", ""), info(testNode("n", "1", "1Gi", tainted("dedicated", "gpu", corev1.TaintEffectNoSchedule))),
			[]string{"node(s) had untolerated taint {dedicated: gpu}"}},
		{"tolerated taint", testPod("p", "", "", func(p *api.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}), info(testNode("n", "1", "1Gi", tainted("dedicated", "gpu", corev1.TaintEffectNoSchedule))), nil},
		{"tolerated by exists", testPod("p", "", "", func(p *api.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}), info(testNode("n", "1", "1Gi", tainted("dedicated", "gpu", corev1.TaintEffectNoSchedule))), nil},
		{"a preference only", testPod("p", "", ""), info(testNode("n", "1", "1Gi", tainted("spare", "", corev1.TaintEffectPreferNoSchedule))), nil},
		{"cpu exactly fits", testPod("p", "500m", ""), info(testNode("n", "1", "1Gi"), testPod("a", "500m", "")), nil},
		{"cpu short", testPod("p", "600m", ""), info(testNode("n", "1", "1Gi"), testPod("a", "500m", "")), []string{reasonCPU}},
		{"memory short", testPod("p", "", "600Mi"), info(testNode("n", "1", "1Gi"), testPod("a", "", "500Mi")), []string{reasonMemory}},
		{"both short", testPod("p", "2", "2Gi"), info(testNode("n", "1", "1Gi")), []string{reasonCPU, reasonMemory}},
		{"allocatable wins over capacity", testPod("p", "900m", ""), info(func() *api.Node {
			n := testNode("n", "1", "1Gi")
			n.Status.Allocatable = api.ResourceList{api.ResourceCPU: "800m"}
			return n
		}()), []string{reasonCPU}},
		{"pod limit", testPod("p", "", ""), info(testNode("n", "1", "1Gi", maxPods("1")), testPod("a", "", "")), []string{reasonPods}},
		{"host port taken", testPod("p", "", "", ports(8080)), info(testNode("n", "1", "1Gi"), testPod("a", "", "", ports(8080))), []string{reasonPorts}},
		{"other host port", testPod("p", "", "", ports(8081)), info(testNode("n", "1", "1Gi"), testPod("a", "", "", ports(8080))), nil},
		{"own network: container ports never conflict", testPod("p", "", "", ports(8080)),
			info(testNode("n", "1", "1Gi", labeled(api.LabelPodNetwork, api.PodNetworkOwn)), testPod("a", "", "", ports(8080))), nil},
		{"own network: a hostPort still does", testPod("p", "", "", hostPortOpt(8080)),
			info(testNode("n", "1", "1Gi", labeled(api.LabelPodNetwork, api.PodNetworkOwn)), testPod("a", "", "", hostPortOpt(8080))), []string{reasonPorts}},
		{"own network: a hostNetwork pod's port meets a hostPort", testPod("p", "", "", ports(8080), func(p *api.Pod) { p.Spec.HostNetwork = true }),
			info(testNode("n", "1", "1Gi", labeled(api.LabelPodNetwork, api.PodNetworkOwn)), testPod("a", "", "", hostPortOpt(8080))), []string{reasonPorts}},
		{"shared network: a hostPort meets a container port", testPod("p", "", "", hostPortOpt(8080)),
			info(testNode("n", "1", "1Gi"), testPod("a", "", "", ports(8080))), []string{reasonPorts}},
		{"allocated ports never conflict", testPod("p", "", "", ports(0)), info(testNode("n", "1", "1Gi"), testPod("a", "", "", ports(0))), nil},
		{"not ready is reported before resources", testPod("p", "2", ""), info(testNode("n", "1", "1Gi", notReady)), []string{reasonNotReady}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fit, reasons := feasible(newPodInfo(tt.pod), []*nodeInfo{tt.node})
			if len(tt.reason) == 0 {
				if len(fit) != 1 {
					t.Fatalf("rejected: %v", reasons)
				}
				return
			}
			if len(fit) != 0 {
				t.Fatalf("fits, want rejected for %v", tt.reason)
			}
			if len(reasons) != len(tt.reason) {
				t.Fatalf("reasons %v, want %v", reasons, tt.reason)
			}
			for _, r := range tt.reason {
				if reasons[r] != 1 {
					t.Fatalf("reasons %v, want %v", reasons, tt.reason)
				}
			}
		})
	}
}

func TestLimitsStandInForRequests(t *testing.T) {
	p := testPod("p", "", "")
	p.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceCPU: "250m"}
	p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "d", Image: "i",
		Resources: api.ResourceRequirements{Requests: api.ResourceList{api.ResourceCPU: "100m", api.ResourceMemory: "1Mi"}}})
	pi := newPodInfo(p)
	if pi.req.milliCPU != 350 || pi.req.memory != 1<<20 {
		t.Fatalf("requests = %+v, want 350m and 1Mi", pi.req)
	}
	if pi.nonZero.memory != 1<<20+defaultMemoryRequest {
		t.Fatalf("non-zero memory = %d", pi.nonZero.memory)
	}
}

func TestUnschedulableMessage(t *testing.T) {
	pod := testPod("p", "2", "", selector("zone", "a"))
	nodes := []*nodeInfo{
		info(testNode("n1", "1", "1Gi", labeled("zone", "a"))),
		info(testNode("n2", "1", "1Gi", labeled("zone", "a"))),
		info(testNode("n3", "4", "1Gi", labeled("zone", "b"))),
	}
	fit, reasons := feasible(newPodInfo(pod), nodes)
	if len(fit) != 0 {
		t.Fatalf("fits on %d nodes", len(fit))
	}
	tests := []struct {
		total   int
		reasons map[string]int
		want    string
	}{
		{3, reasons, "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) didn't match node selector."},
		{2, map[string]int{reasonMemory: 1, reasonCPU: 1}, "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."},
		{0, nil, "0/0 nodes are available: no nodes are registered."},
	}
	for _, tt := range tests {
		if got := unschedulableMessage(tt.total, tt.reasons); got != tt.want {
			t.Errorf("message = %q\nwant      %q", got, tt.want)
		}
	}
}
