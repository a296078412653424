package scheduler

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
)

func TestInterPodAffinity(t *testing.T) {
	host := func(name string) *api.Node {
		n := testNode(name, "4", "4Gi")
		n.Labels = map[string]string{"kubernetes.io/hostname": name}
		return n
	}
	labelled := func(name, ns, app string) *api.Pod {
		p := testPod(name, "100m", "")
		p.Namespace, p.UID, p.Labels = ns, "uid-"+ns+"-"+name, map[string]string{"app": app}
		return p
	}
	term := func(app string) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
	}
	anti := func(p *api.Pod, terms ...corev1.PodAffinityTerm) *api.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
		return p
	}
	near := func(p *api.Pod, terms ...corev1.PodAffinityTerm) *api.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
		return p
	}
	cases := []struct {
		name   string
		pod    *api.Pod
		placed map[string][]*api.Pod
		fit    []string
		reason string
	}{
		{"one replica per node", anti(labelled("new", "default", "web"), term("web")),
			map[string][]*api.Pod{"a": {labelled("w1", "default", "web")}, "b": {labelled("db", "default", "db")}},
			[]string{"b", "c"}, reasonPodAntiAffinity},
		{"another namespace's pods do not count", anti(labelled("new", "default", "web"), term("web")),
			map[string][]*api.Pod{"a": {labelled("w1", "other", "web")}},
			[]string{"a", "b", "c"}, ""},
		{"nor another namespace's anti-affinity", labelled("new", "default", "web"),
			map[string][]*api.Pod{"b": {anti(labelled("loner", "other", "db"), term("web"))}},
			[]string{"a", "b", "c"}, ""},
		{"an existing pod's anti-affinity keeps others out", labelled("new", "default", "web"),
			map[string][]*api.Pod{"b": {anti(labelled("loner", "default", "db"), term("web"))}},
			[]string{"a", "c"}, reasonExistingAntiAffinity},
		{"next to the cache", near(labelled("new", "default", "web"), term("cache")),
			map[string][]*api.Pod{"c": {labelled("cache", "default", "cache")}},
			[]string{"c"}, reasonPodAffinity},
		{"no cache yet: nowhere", near(labelled("new", "default", "web"), term("cache")),
			nil, nil, reasonPodAffinity},
		{"the first of its group: anywhere", near(labelled("new", "default", "web"), term("web")),
			nil, []string{"a", "b", "c"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache := newPodCache()
			nodes := []*api.Node{host("a"), host("b"), host("c")}
			for node, pods := range c.placed {
				for _, p := range pods {
					p.Spec.NodeName = node
					cache.setPod(p)
				}
			}
			infos := nodeInfos(cache, nodes)
			pi := newPodInfo(c.pod)
			pi.podAffinity = newPodAffinity(pi, infos, cache)
			fit, reasons := feasible(pi, infos)
			names := nodeNames(fit)
			if fmt.Sprint(names) != fmt.Sprint(c.fit) {
				t.Errorf("fit %v, want %v (reasons %v)", names, c.fit, reasons)
			}
			if c.reason != "" && reasons[c.reason] == 0 {
				t.Errorf("reasons %v lack %q", reasons, c.reason)
			}
		})
	}
}

// TestInterPodAffinityScore: what each node's domains weigh for a pod, as
// kube-scheduler's InterPodAffinity score sums them before normalizing.
func TestInterPodAffinityScore(t *testing.T) {
	const zone, host = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
	node := func(name, z string) *api.Node {
		n := testNode(name, "4", "4Gi")
		n.Labels = map[string]string{host: name}
		if z != "" {
			n.Labels[zone] = z
		}
		return n
	}
	pod := func(name, ns, app string) *api.Pod {
		p := testPod(name, "100m", "")
		p.Namespace, p.UID, p.Labels = ns, "uid-"+ns+"-"+name, map[string]string{"app": app}
		return p
	}
	term := func(key, app string) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
	}
	weighted := func(w int32, key, app string) corev1.WeightedPodAffinityTerm {
		return corev1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: term(key, app)}
	}
	affinity := func(p *api.Pod) *corev1.Affinity {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}, PodAntiAffinity: &corev1.PodAntiAffinity{}}
		}
		return p.Spec.Affinity
	}
	prefer := func(p *api.Pod, terms ...corev1.WeightedPodAffinityTerm) *api.Pod {
		a := affinity(p).PodAffinity
		a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution, terms...)
		return p
	}
	avoid := func(p *api.Pod, terms ...corev1.WeightedPodAffinityTerm) *api.Pod {
		a := affinity(p).PodAntiAffinity
		a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution, terms...)
		return p
	}
	require := func(p *api.Pod, terms ...corev1.PodAffinityTerm) *api.Pod {
		a := affinity(p).PodAffinity
		a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
		return p
	}
	// Nodes a and b are in zone z1, c in z2, d in none.
	cases := []struct {
		name   string
		pod    *api.Pod
		placed map[string][]*api.Pod
		want   string // the raw score of a, b, c, d; "none" when nothing weighs
	}{
		{"nothing has terms: no walk, no score", pod("new", "default", "web"),
			map[string][]*api.Pod{"a": {pod("cache", "default", "cache")}}, "none"},
		{"preferred affinity: the zone of the cache", prefer(pod("new", "default", "web"), weighted(10, zone, "cache")),
			map[string][]*api.Pod{"a": {pod("cache", "default", "cache")}}, "[10 10 0 0]"},
		{"each matching pod counts", prefer(pod("new", "default", "web"), weighted(10, zone, "cache")),
			map[string][]*api.Pod{"a": {pod("c1", "default", "cache")}, "b": {pod("c2", "default", "cache")}, "c": {pod("c3", "default", "cache")}}, "[20 20 10 0]"},
		{"preferred anti-affinity: away from the web pods' host", avoid(pod("new", "default", "web"), weighted(5, host, "web")),
			map[string][]*api.Pod{"a": {pod("w1", "default", "web")}}, "[-5 0 0 0]"},
		{"both, summed", avoid(prefer(pod("new", "default", "web"), weighted(10, zone, "cache")), weighted(5, host, "web")),
			map[string][]*api.Pod{"a": {pod("cache", "default", "cache"), pod("w1", "default", "web")}}, "[5 10 0 0]"},
		{"another namespace's pods do not count", prefer(pod("new", "default", "web"), weighted(10, zone, "cache")),
			map[string][]*api.Pod{"a": {pod("cache", "other", "cache")}}, "none"},
		{"a placed pod's preferred affinity draws the pod", pod("new", "default", "web"),
			map[string][]*api.Pod{"c": {prefer(pod("db", "default", "db"), weighted(7, zone, "web"))}}, "[0 0 7 0]"},
		{"a placed pod's preferred anti-affinity pushes it away", pod("new", "default", "web"),
			map[string][]*api.Pod{"a": {avoid(pod("loner", "default", "db"), weighted(3, host, "web"))}}, "[-3 0 0 0]"},
		{"a placed pod's required affinity weighs hardPodAffinityWeight", pod("new", "default", "web"),
			map[string][]*api.Pod{"b": {require(pod("sidecar", "default", "side"), term(zone, "web"))}}, "[1 1 0 0]"},
		{"a placed pod of another namespace weighs nothing", pod("new", "default", "web"),
			map[string][]*api.Pod{"c": {prefer(pod("db", "other", "db"), weighted(7, zone, "web"))}}, "none"},
		{"a placed pod's terms that do not match it weigh nothing", pod("new", "default", "web"),
			map[string][]*api.Pod{"c": {prefer(pod("db", "default", "db"), weighted(7, zone, "cache"))}}, "none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache := newPodCache()
			for n, pods := range c.placed {
				for _, p := range pods {
					p.Spec.NodeName = n
					cache.setPod(p)
				}
			}
			var infos []*nodeInfo
			for _, n := range []*api.Node{node("a", "z1"), node("b", "z1"), node("c", "z2"), node("d", "")} {
				a, maxPods := allocatable(n)
				infos = append(infos, &nodeInfo{node: n, alloc: a, maxPods: maxPods, used: cache.usageLocked(n.Name)})
			}
			pi := newPodInfo(c.pod)
			pi.podAffinity = newPodAffinity(pi, infos, cache)
			got := "none"
			if pi.podAffinity != nil && len(pi.podAffinity.score) > 0 {
				var raw []int64
				for _, ni := range infos {
					raw = append(raw, podAffinityScore(pi, ni))
				}
				got = fmt.Sprint(raw)
			}
			if got != c.want {
				t.Fatalf("scores %s, want %s", got, c.want)
			}
			if got == "none" {
				return
			}
			// Normalized over the nodes, min-max, times the weight: the
			// best node gains weightPodAffinity*maxScore over the worst.
			with := scores(pi, infos)
			pi.podAffinity = nil
			without := scores(pi, infos)
			var gains []float64
			for i := range infos {
				gains = append(gains, with[i]-without[i])
			}
			if lo, hi := slices.Min(gains), slices.Max(gains); lo != 0 || hi != weightPodAffinity*maxScore {
				t.Errorf("pod affinity adds %v to the nodes' scores, want 0 to %d", gains, weightPodAffinity*maxScore)
			}
		})
	}
}

// The cache counts the placed pods whose terms bear on others, so that a
// decision among pods without any walks none.
func TestCacheCountsPodsWithPodAffinity(t *testing.T) {
	c := newPodCache()
	anti := testPod("anti", "", "")
	anti.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "h"}}}}
	prefers := testPod("prefers", "", "")
	prefers.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "h"}}}}}
	plain := testPod("plain", "", "")
	count := func() string { return fmt.Sprint(len(c.withRequiredAnti), len(c.withWeighingTerms)) }
	for _, p := range []*api.Pod{anti, prefers, plain} {
		p.Spec.NodeName = "n1"
		c.setPod(p)
	}
	if got := count(); got != "1 1" {
		t.Fatalf("counted %s, want 1 1", got)
	}
	moved := cache.DeepCopy(anti)
	moved.Spec.NodeName = "n2"
	c.setPod(moved)
	c.deletePod(prefers)
	if got := count(); got != "1 0" || c.withRequiredAnti["default/anti"].node != "n2" {
		t.Fatalf("counted %s, want 1 0 with the moved pod on n2", got)
	}
	next := testPod("next", "", "")
	next.Spec.Affinity = prefers.Spec.Affinity
	c.assumeLocked(newPodInfo(next), "n1")
	if got := count(); got != "1 1" {
		t.Fatalf("counted %s with an assumed pod, want 1 1", got)
	}
	c.forget("default/next", next.UID)
	c.deletePod(moved)
	if got := count(); got != "0 0" {
		t.Fatalf("counted %s, want 0 0", got)
	}
}
