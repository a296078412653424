package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/pkg/api"
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
			pi.podAffinity = newPodAffinity(pi, infos, cache.pods)
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
