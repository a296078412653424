package admission

import (
	"slices"
	"sort"
	"strings"
)

// A kubelet's Node keeps the labels admins steer workloads by: those under
// node-restriction.kubernetes.io/, and kubernetes.io and k8s.io labels
// other than a kubelet's own, are not the node's to set or change
// (Kubernetes' NodeRestriction).

// ForbiddenNodeLabels are the labels that differ between old and next and
// that a node may not change on its own Node (Kubernetes'
// getForbiddenLabels).
func ForbiddenNodeLabels(old, next map[string]string) []string {
	var bad []string
	check := func(k string) {
		ov, had := old[k]
		nv, has := next[k]
		if had == has && ov == nv {
			return
		}
		prefix, _, named := strings.Cut(k, "/")
		if !named || slices.Contains(bad, k) {
			return
		}
		if inDomain(prefix, "node-restriction.kubernetes.io") ||
			(inDomain(prefix, "kubernetes.io") || inDomain(prefix, "k8s.io")) && !kubeletLabel(k, prefix) {
			bad = append(bad, k)
		}
	}
	for k := range next {
		check(k)
	}
	for k := range old {
		check(k)
	}
	sort.Strings(bad)
	return bad
}

// inDomain tells whether a label prefix is domain or one of its subdomains.
func inDomain(prefix, domain string) bool {
	return prefix == domain || strings.HasSuffix(prefix, "."+domain)
}

// kubeletLabel: the labels a kubelet sets on its own Node (Kubernetes'
// kubeletapis.IsKubeletLabel).
func kubeletLabel(key, prefix string) bool {
	switch key {
	case "kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
		"beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type",
		"node.kubernetes.io/instance-type", "topology.kubernetes.io/region", "topology.kubernetes.io/zone",
		"failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone":
		return true
	}
	return inDomain(prefix, "kubelet.kubernetes.io") || inDomain(prefix, "node.kubernetes.io")
}
