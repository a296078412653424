package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"minik8s/pkg/api"
)

// Required inter-pod affinity and anti-affinity, as kube-scheduler's
// InterPodAffinity filter: a pod with a required podAffinity term goes
// only to a node whose domain (its value of the term's topologyKey) holds
// a pod the term matches (or anywhere, when none does and the pod matches
// the term itself: the first of a group); one with a podAntiAffinity term
// never to a domain holding such a pod; and no pod goes to a domain whose
// pods' own anti-affinity terms match it. A term looks in the pod's own
// namespace only (validation refuses namespaces and namespaceSelector):
// across namespaces, one tenant's pods could steer or block another's.
// Preferred terms are not weighed.

const (
	reasonPodAffinity          = "node(s) didn't match pod affinity rules"
	reasonPodAntiAffinity      = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// termDomains are the values of a term's key holding a pod it matches.
type termDomains struct {
	key    string
	values map[string]bool
	// self: the scheduled pod matches the term itself.
	self bool
}

type podAffinity struct {
	affinity, anti []termDomains
	// forbidden are the domains (key, value) whose pods' required
	// anti-affinity matches the scheduled pod.
	forbidden map[string]map[string]bool
}

// termMatches says whether term, of owner, matches pod: a pod of the
// owner's namespace (validation refuses terms that name others) that the
// selector matches.
func termMatches(term *corev1.PodAffinityTerm, owner, pod *api.Pod) bool {
	if pod.Namespace != owner.Namespace || term.LabelSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return false
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
	return sel.Matches(labels.Set(pod.Labels))
}

func requiredTerms(a *corev1.Affinity) (affinity, anti []corev1.PodAffinityTerm) {
	if a == nil {
		return nil, nil
	}
	if a.PodAffinity != nil {
		affinity = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if a.PodAntiAffinity != nil {
		anti = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return affinity, anti
}

// newPodAffinity finds where the pod's required terms and the placed pods'
// anti-affinity allow it; nil when nothing constrains it.
func newPodAffinity(pi *podInfo, nodes []*nodeInfo, placed map[string]*placement) *podAffinity {
	pod := pi.pod
	nodeLabels := make(map[string]map[string]string, len(nodes))
	for _, ni := range nodes {
		nodeLabels[ni.node.Name] = ni.node.Labels
	}
	affTerms, antiTerms := requiredTerms(pod.Spec.Affinity)
	pa := &podAffinity{forbidden: map[string]map[string]bool{}}
	domains := func(terms []corev1.PodAffinityTerm) []termDomains {
		var out []termDomains
		for i := range terms {
			td := termDomains{key: terms[i].TopologyKey, values: map[string]bool{}, self: termMatches(&terms[i], pod, pod)}
			for _, p := range placed {
				if p.info.pod.UID == pod.UID || !termMatches(&terms[i], pod, p.info.pod) {
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
	pa.affinity, pa.anti = domains(affTerms), domains(antiTerms)
	for _, p := range placed {
		_, theirs := requiredTerms(p.info.pod.Spec.Affinity)
		for i := range theirs {
			if p.info.pod.UID == pod.UID || !termMatches(&theirs[i], p.info.pod, pod) {
				continue
			}
			key := theirs[i].TopologyKey
			if v, ok := nodeLabels[p.node][key]; ok {
				if pa.forbidden[key] == nil {
					pa.forbidden[key] = map[string]bool{}
				}
				pa.forbidden[key][v] = true
			}
		}
	}
	if len(pa.affinity) == 0 && len(pa.anti) == 0 && len(pa.forbidden) == 0 {
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
