package daemonset

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

var now = time.Unix(1000, 0).UTC()

func node(name string, opts ...func(*api.Node)) *api.Node {
	n := &api.Node{ObjectMeta: api.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func labeled(k, v string) func(*api.Node) { return func(n *api.Node) { n.Labels[k] = v } }

func tainted(effect corev1.TaintEffect) func(*api.Node) {
	return func(n *api.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "db", Effect: effect})
	}
}

func daemonSet(opts ...func(*api.DaemonSet)) *api.DaemonSet {
	one, zero := api.IntOrString("1"), api.IntOrString("0")
	ds := &api.DaemonSet{ObjectMeta: api.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-uid", Generation: 2},
		Spec: api.DaemonSetSpec{Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template:       api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "agent"}}},
			UpdateStrategy: api.DaemonSetUpdateStrategy{Type: api.DaemonSetRollingUpdate, RollingUpdate: &api.RollingUpdateDaemonSet{MaxUnavailable: &one, MaxSurge: &zero}}}}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

// pod is a pod of the set on node, of revision hash, created at age
// seconds before now; ready says whether it is ready (for a minute).
func pod(name, node, hash string, age int, ready bool) *api.Pod {
	created := now.Add(-time.Duration(age) * time.Second)
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, UID: "uid-" + name, CreationTimestamp: &created,
		Labels: map[string]string{"app": "agent", api.LabelControllerRevisionHash: hash}},
		Spec: api.PodSpec{NodeName: node}, Status: api.PodStatus{Phase: api.PodRunning}}
	if ready {
		since := now.Add(-time.Minute)
		p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: &since}}
	}
	return p
}

func podNames(pods []*api.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func TestPlan(t *testing.T) {
	three := []*api.Node{node("n1"), node("n2"), node("n3")}
	surge := func(ds *api.DaemonSet) {
		one, zero := api.IntOrString("1"), api.IntOrString("0")
		ds.Spec.UpdateStrategy.RollingUpdate = &api.RollingUpdateDaemonSet{MaxUnavailable: &zero, MaxSurge: &one}
	}
	tests := []struct {
		name    string
		ds      *api.DaemonSet
		nodes   []*api.Node
		pods    []*api.Pod
		create  []string
		delete  []string
		desired int32
	}{
		{name: "a pod on every node", ds: daemonSet(), nodes: three, create: []string{"n1", "n2", "n3"}, desired: 3},
		{name: "only nodes the selector matches", ds: daemonSet(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			nodes: []*api.Node{node("n1", labeled("disk", "ssd")), node("n2"), node("n3", labeled("disk", "ssd"))}, create: []string{"n1", "n3"}, desired: 2},
		{name: "a node's NoSchedule taint: no new pod, the one there stays", ds: daemonSet(),
			nodes: []*api.Node{node("n1", tainted(corev1.TaintEffectNoSchedule)), node("n2", tainted(corev1.TaintEffectNoSchedule))},
			pods:  []*api.Pod{pod("a", "n1", "h", 10, true)}, desired: 0},
		{name: "a tolerated taint", ds: daemonSet(func(ds *api.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), nodes: []*api.Node{node("n1", tainted(corev1.TaintEffectNoSchedule))}, create: []string{"n1"}, desired: 1},
		{name: "a cordoned node still runs the daemon", ds: daemonSet(), nodes: []*api.Node{node("n1", func(n *api.Node) { n.Spec.Unschedulable = true })},
			create: []string{"n1"}, desired: 1},
		{name: "a node no longer matching loses its pod", ds: daemonSet(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			nodes: []*api.Node{node("n1")}, pods: []*api.Pod{pod("a", "n1", "h", 10, true)}, delete: []string{"a"}},
		{name: "the pod of a node gone", ds: daemonSet(), nodes: []*api.Node{node("n1")},
			pods: []*api.Pod{pod("a", "n1", "h", 10, true), pod("b", "gone", "h", 10, true)}, delete: []string{"b"}, desired: 1},
		{name: "two pods on a node: the newer goes", ds: daemonSet(), nodes: []*api.Node{node("n1")},
			pods: []*api.Pod{pod("old", "n1", "h", 10, true), pod("new", "n1", "h", 5, true)}, delete: []string{"new"}, desired: 1},
		{name: "a failed pod is made again", ds: daemonSet(), nodes: []*api.Node{node("n1")},
			pods:   []*api.Pod{func() *api.Pod { p := pod("a", "n1", "h", 10, false); p.Status.Phase = api.PodFailed; return p }()},
			create: []string{"n1"}, delete: []string{"a"}, desired: 1},
		{name: "rolling update: one available old pod at a time", ds: daemonSet(), nodes: three,
			pods:   []*api.Pod{pod("a", "n1", "old", 10, true), pod("b", "n2", "old", 10, true), pod("c", "n3", "old", 10, true)},
			delete: []string{"a"}, desired: 3},
		{name: "rolling update waits for the new pod", ds: daemonSet(), nodes: three,
			pods:    []*api.Pod{pod("a", "n1", "h", 1, false), pod("b", "n2", "old", 10, true), pod("c", "n3", "old", 10, true)},
			desired: 3},
		{name: "rolling update replaces an unavailable old pod at once", ds: daemonSet(), nodes: three,
			pods:   []*api.Pod{pod("a", "n1", "h", 1, false), pod("b", "n2", "old", 10, false), pod("c", "n3", "old", 10, true)},
			delete: []string{"b"}, desired: 3},
		{name: "surge: a new pod beside the old", ds: daemonSet(surge), nodes: three,
			pods:   []*api.Pod{pod("a", "n1", "old", 10, true), pod("b", "n2", "old", 10, true), pod("c", "n3", "old", 10, true)},
			create: []string{"n1"}, desired: 3},
		{name: "surge: the old pod goes once the new is available", ds: daemonSet(surge), nodes: three,
			pods: []*api.Pod{pod("a", "n1", "old", 10, true), pod("a2", "n1", "h", 5, true), pod("b", "n2", "old", 10, true),
				pod("c", "n3", "old", 10, true)},
			delete: []string{"a"}, desired: 3},
		{name: "surge: waiting for the new pod", ds: daemonSet(surge), nodes: three,
			pods: []*api.Pod{pod("a", "n1", "old", 10, true), pod("a2", "n1", "h", 5, false), pod("b", "n2", "old", 10, true),
				pod("c", "n3", "old", 10, true)},
			desired: 3},
		{name: "OnDelete leaves old pods", ds: daemonSet(func(ds *api.DaemonSet) {
			ds.Spec.UpdateStrategy = api.DaemonSetUpdateStrategy{Type: api.DaemonSetOnDelete}
		}), nodes: three, pods: []*api.Pod{pod("a", "n1", "old", 10, true), pod("b", "n2", "old", 10, true), pod("c", "n3", "old", 10, true)}, desired: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newView(tt.ds, "h", tt.nodes, tt.pods, now)
			pl := v.manage()
			if len(pl.create) == 0 && len(pl.delete) == 0 && tt.ds.Spec.UpdateStrategy.Type == api.DaemonSetRollingUpdate {
				pl = v.rollingUpdate()
			}
			slices.Sort(pl.create)
			if !slices.Equal(pl.create, tt.create) || !slices.Equal(podNames(pl.delete), tt.delete) {
				t.Errorf("create %v delete %v, want %v and %v", pl.create, podNames(pl.delete), tt.create, tt.delete)
			}
			if st := v.status(&pl); st.DesiredNumberScheduled != tt.desired {
				t.Errorf("desired %d, want %d", st.DesiredNumberScheduled, tt.desired)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	ds := daemonSet(func(ds *api.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "agent"} })
	nodes := []*api.Node{node("n1", labeled("role", "agent")), node("n2", labeled("role", "agent")), node("n3", labeled("role", "agent")), node("n4")}
	pods := []*api.Pod{pod("a", "n1", "h", 10, true), pod("b", "n2", "old", 10, true), pod("c", "n3", "h", 10, false), pod("d", "n4", "h", 10, true)}
	v := newView(ds, "h", nodes, pods, now)
	var pl plan
	st := v.status(&pl)
	want := api.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberMisscheduled: 1,
		NumberReady: 2, NumberAvailable: 2, UpdatedNumberScheduled: 2, NumberUnavailable: 1}
	if st.ObservedGeneration != want.ObservedGeneration || st.DesiredNumberScheduled != want.DesiredNumberScheduled ||
		st.CurrentNumberScheduled != want.CurrentNumberScheduled || st.NumberMisscheduled != want.NumberMisscheduled ||
		st.NumberReady != want.NumberReady || st.NumberAvailable != want.NumberAvailable ||
		st.UpdatedNumberScheduled != want.UpdatedNumberScheduled || st.NumberUnavailable != want.NumberUnavailable {
		t.Fatalf("status %+v, want %+v", st, want)
	}
	// minReadySeconds: a pod ready for a minute is not yet available
	// after two, and the sync is asked again when it will be.
	ds.Spec.MinReadySeconds = 120
	v = newView(ds, "h", nodes, pods, now)
	if st := v.status(&pl); st.NumberAvailable != 0 || pl.recheck != time.Minute {
		t.Fatalf("available %d recheck %s, want 0 and 1m", st.NumberAvailable, pl.recheck)
	}
}

func TestNewPodIsHeldToItsNode(t *testing.T) {
	ds := daemonSet(func(ds *api.DaemonSet) {
		ds.Spec.Template.Spec.HostNetwork = true
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}}}}}}}
	})
	p := newPod(ds, "h", "n2")
	if targetNode(p) != "n2" || p.Labels[api.LabelControllerRevisionHash] != "h" || p.Labels["app"] != "agent" {
		t.Fatalf("pod %+v", p)
	}
	if ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions == nil {
		t.Fatal("the template was changed")
	}
	keys := map[string]bool{}
	for _, tol := range p.Spec.Tolerations {
		keys[tol.Key] = true
	}
	for _, k := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady, corev1.TaintNodeUnschedulable, corev1.TaintNodeNetworkUnavailable} {
		if !keys[k] {
			t.Errorf("no toleration of %s: %+v", k, p.Spec.Tolerations)
		}
	}
	if ref := p.OwnerReferences; len(ref) != 1 || ref[0].Kind != "DaemonSet" || ref[0].UID != "ds-uid" {
		t.Fatalf("owner %+v", ref)
	}
}
