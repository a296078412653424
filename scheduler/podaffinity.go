package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"minik8s/pkg/api"
)

// Inter-pod affinity and anti-affinity, as kube-scheduler's InterPodAffinity
// plugin. Its filter: a pod with a required podAffinity term goes only to a
// node whose domain (its value of the term's topologyKey) holds a pod the
// term matches (or anywhere, when none does and the pod matches the term
// itself: the first of a group); one with a podAntiAffinity term never to a
// domain holding such a pod; and no pod goes to a domain whose pods' own
// required anti-affinity terms match it. Its score: a node's domains count
// the weights of the pod's preferred affinity terms matched by their pods,
// less those of its preferred anti-affinity terms, plus (symmetrically) the
// weights of the placed pods' preferred terms that match the pod (less for
// anti-affinity) and hardPodAffinityWeight for each of their required
// affinity terms that does. A term looks in the pod's own namespace only
// (validation refuses namespaces and namespaceSelector): across namespaces,
// one tenant's pods could steer or block another's.

const (
	reasonPodAffinity          = "node(s) didn't match pod affinity rules"
	reasonPodAntiAffinity      = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
	// weightPodAffinity is InterPodAffinity's weight in kube-scheduler's
	// default profile; hardPodAffinityWeight its default weight of a
	// placed pod's required affinity term matching the pod.
	weightPodAffinity     = 2
	hardPodAffinityWeight = 1
)

// affinityTerm is a pod (anti-)affinity term made ready to match.
type affinityTerm struct {
	key string
	// sel includes the term's matchLabelKeys and mismatchLabelKeys; nil
	// matches nothing.
	sel    labels.Selector
	weight int64
}

// podTerms are a pod's pod (anti-)affinity terms.
type podTerms struct {
	affinity, anti         []affinityTerm // required
	prefAffinity, prefAnti []affinityTerm // preferred, weighted
}

// bearsOnOthers says what of the terms bear on other pods being placed:
// the required anti-affinity keeps them out (the filter), the required
// affinity and the preferred terms weigh (the score).
func (t *podTerms) bearsOnOthers() (requiredAnti, weighs bool) {
	if t == nil {
		return false, false
	}
	return len(t.anti) > 0, len(t.affinity)+len(t.prefAffinity)+len(t.prefAnti) > 0
}

// newPodTerms compiles the pod's pod (anti-)affinity; nil if it has none.
func newPodTerms(pod *api.Pod) *podTerms {
	a := pod.Spec.Affinity
	if a == nil || (a.PodAffinity == nil && a.PodAntiAffinity == nil) {
		return nil
	}
	required := func(terms []corev1.PodAffinityTerm) []affinityTerm {
		var out []affinityTerm
		for i := range terms {
			out = append(out, affinityTerm{key: terms[i].TopologyKey, sel: termSelector(&terms[i], pod)})
		}
		return out
	}
	preferred := func(terms []corev1.WeightedPodAffinityTerm) []affinityTerm {
		var out []affinityTerm
		for i := range terms {
			t := &terms[i].PodAffinityTerm
			out = append(out, affinityTerm{key: t.TopologyKey, sel: termSelector(t, pod), weight: int64(terms[i].Weight)})
		}
		return out
	}
	t := &podTerms{}
	if pa := a.PodAffinity; pa != nil {
		t.affinity = required(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		t.prefAffinity = preferred(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		t.anti = required(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		t.prefAnti = preferred(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if len(t.affinity)+len(t.anti)+len(t.prefAffinity)+len(t.prefAnti) == 0 {
		return nil
	}
	return t
}

// termSelector is term's selector for owner's pod, with its matchLabelKeys
// and mismatchLabelKeys; nil (matching nothing) without one.
func termSelector(term *corev1.PodAffinityTerm, owner *api.Pod) labels.Selector {
	if term.LabelSelector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return nil
	}
	for _, k := range term.MatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.Equals, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range term.MismatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.NotEquals, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	return sel
}

// matches says whether term, of owner, matches pod: a pod of the owner's
// namespace (validation refuses terms that name others) that the selector
// matches.
func (t *affinityTerm) matches(owner, pod *api.Pod) bool {
	return t.sel != nil && pod.Namespace == owner.Namespace && t.sel.Matches(labels.Set(pod.Labels))
}

// termDomains are the values of a term's key holding a pod it matches.
type termDomains struct {
	key    string
	values map[string]bool
	// self: the scheduled pod matches the term itself.
	self bool
}

// podAffinity is what inter-pod affinity makes of the nodes for one
// decision.
type podAffinity struct {
	affinity, anti []termDomains
	// forbidden are the domains (key, value) whose pods' required
	// anti-affinity matches the scheduled pod.
	forbidden map[string]map[string]bool
	// score is the weight each domain (key, value) adds to its nodes'
	// scores.
	score map[string]map[string]int64
}

func (pa *podAffinity) addScore(key string, nodeLabels map[string]string, w int64) {
	v, ok := nodeLabels[key]
	if !ok || w == 0 {
		return
	}
	if pa.score[key] == nil {
		pa.score[key] = map[string]int64{}
	}
	pa.score[key][v] += w
}

// newPodAffinity finds where the pod's required terms and the placed pods'
// anti-affinity allow it, and how its preferred terms and the placed
// pods' weigh the nodes; nil when nothing does. It reads the cache under
// its lock; the placed pods with terms bearing on others are counted
// there, so a pod without terms of its own, among pods without any, costs
// no walk.
func newPodAffinity(pi *podInfo, nodes []*nodeInfo, c *podCache) *podAffinity {
	pod, own := pi.pod, pi.terms
	if own == nil && len(c.withRequiredAnti) == 0 && len(c.withWeighingTerms) == 0 {
		return nil
	}
	nodeLabels := make(map[string]map[string]string, len(nodes))
	for _, ni := range nodes {
		nodeLabels[ni.node.Name] = ni.node.Labels
	}
	pa := &podAffinity{forbidden: map[string]map[string]bool{}, score: map[string]map[string]int64{}}
	if own != nil {
		domains := func(terms []affinityTerm) []termDomains {
			var out []termDomains
			for i := range terms {
				td := termDomains{key: terms[i].key, values: map[string]bool{}, self: terms[i].matches(pod, pod)}
				for _, p := range c.pods {
					if p.info.pod.UID == pod.UID || !terms[i].matches(pod, p.info.pod) {
						continue
					}
					if v, ok := nodeLabels[p.node][td.key]; ok {
						td.values[v] = true
					}
				}
				out = append(out, td)
			}
			return out
		}
		pa.affinity, pa.anti = domains(own.affinity), domains(own.anti)
		if len(own.prefAffinity)+len(own.prefAnti) > 0 {
			for _, p := range c.pods {
				if p.info.pod.UID == pod.UID {
					continue
				}
				for i := range own.prefAffinity {
					if t := &own.prefAffinity[i]; t.matches(pod, p.info.pod) {
						pa.addScore(t.key, nodeLabels[p.node], t.weight)
					}
				}
				for i := range own.prefAnti {
					if t := &own.prefAnti[i]; t.matches(pod, p.info.pod) {
						pa.addScore(t.key, nodeLabels[p.node], -t.weight)
					}
				}
			}
		}
	}
	for _, p := range c.withRequiredAnti {
		theirs := p.info.terms
		for i := range theirs.anti {
			t := &theirs.anti[i]
			if p.info.pod.UID == pod.UID || !t.matches(p.info.pod, pod) {
				continue
			}
			if v, ok := nodeLabels[p.node][t.key]; ok {
				if pa.forbidden[t.key] == nil {
					pa.forbidden[t.key] = map[string]bool{}
				}
				pa.forbidden[t.key][v] = true
			}
		}
	}
	for _, p := range c.withWeighingTerms {
		if p.info.pod.UID == pod.UID {
			continue
		}
		theirs, lbls := p.info.terms, nodeLabels[p.node]
		for i := range theirs.affinity {
			if t := &theirs.affinity[i]; t.matches(p.info.pod, pod) {
				pa.addScore(t.key, lbls, hardPodAffinityWeight)
			}
		}
		for i := range theirs.prefAffinity {
			if t := &theirs.prefAffinity[i]; t.matches(p.info.pod, pod) {
				pa.addScore(t.key, lbls, t.weight)
			}
		}
		for i := range theirs.prefAnti {
			if t := &theirs.prefAnti[i]; t.matches(p.info.pod, pod) {
				pa.addScore(t.key, lbls, -t.weight)
			}
		}
	}
	if len(pa.affinity) == 0 && len(pa.anti) == 0 && len(pa.forbidden) == 0 && len(pa.score) == 0 {
		return nil
	}
	return pa
}

// interPodAffinity is the filter of required pod (anti-)affinity.
func interPodAffinity(pi *podInfo, ni *nodeInfo) []string {
	pa := pi.podAffinity
	if pa == nil {
		return nil
	}
	lbls := ni.node.Labels
	// In kube-scheduler's order: the pod's affinity, its anti-affinity,
	// then the placed pods' anti-affinity.
	// The first pod of a group that matches its own terms may go anywhere
	// no pod of the group is yet.
	first := true
	for _, td := range pa.affinity {
		first = first && len(td.values) == 0 && td.self
	}
	for _, td := range pa.affinity {
		v, ok := lbls[td.key]
		if !ok || (!td.values[v] && !first) {
			return []string{reasonPodAffinity}
		}
	}
	for _, td := range pa.anti {
		if v, ok := lbls[td.key]; ok && td.values[v] {
			return []string{reasonPodAntiAffinity}
		}
	}
	for key, values := range pa.forbidden {
		if v, ok := lbls[key]; ok && values[v] {
			return []string{reasonExistingAntiAffinity}
		}
	}
	return nil
}

// podAffinityScore is what the node's domains weigh for the pod (score).
func podAffinityScore(pi *podInfo, ni *nodeInfo) int64 {
	var s int64
	for key, values := range pi.podAffinity.score {
		if v, ok := ni.node.Labels[key]; ok {
			s += values[v]
		}
	}
	return s
}
