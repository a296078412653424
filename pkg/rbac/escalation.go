package rbac

import (
	"slices"
	"strings"

	"minik8s/pkg/api"
)

// Covers tells whether owner grants everything requested does, as
// Kubernetes checks before letting a user create or update a role or a
// binding (no escalation: one cannot grant what one does not hold). It
// returns the atomic rules (one verb, group, resource and name, or one verb
// and URL) that owner does not cover.
func Covers(owner, requested []api.PolicyRule) (bool, []api.PolicyRule) {
	var missing []api.PolicyRule
	for _, r := range requested {
		for _, sub := range breakdown(r) {
			if !slices.ContainsFunc(owner, func(o api.PolicyRule) bool { return ruleCovers(&o, &sub) }) {
				missing = append(missing, sub)
			}
		}
	}
	return len(missing) == 0, missing
}

// breakdown splits a rule into rules of one verb, group, resource and
// resource name each, or of one verb and one URL.
func breakdown(r api.PolicyRule) []api.PolicyRule {
	var out []api.PolicyRule
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				if len(r.ResourceNames) == 0 {
					out = append(out, api.PolicyRule{Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{res}})
					continue
				}
				for _, n := range r.ResourceNames {
					out = append(out, api.PolicyRule{Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{res},
						ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			out = append(out, api.PolicyRule{Verbs: []string{v}, NonResourceURLs: []string{u}})
		}
	}
	return out
}

func ruleCovers(owner, sub *api.PolicyRule) bool {
	verbs := slices.Contains(owner.Verbs, api.VerbAll) || hasAll(owner.Verbs, sub.Verbs)
	groups := slices.Contains(owner.APIGroups, api.APIGroupAll) || hasAll(owner.APIGroups, sub.APIGroups)
	resources := coversAll(owner.Resources, sub.Resources, resourceCovers)
	urls := coversAll(owner.NonResourceURLs, sub.NonResourceURLs, urlCovers)
	names := len(owner.ResourceNames) == 0 ||
		(len(sub.ResourceNames) > 0 && hasAll(owner.ResourceNames, sub.ResourceNames))
	return verbs && groups && resources && urls && names
}

func hasAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

func coversAll(owner, want []string, covers func(o, w string) bool) bool {
	for _, w := range want {
		if !slices.ContainsFunc(owner, func(o string) bool { return covers(o, w) }) {
			return false
		}
	}
	return true
}

func resourceCovers(owner, want string) bool {
	if owner == want || owner == api.ResourceAll {
		return true
	}
	if sub, ok := strings.CutPrefix(owner, "*/"); ok {
		_, wantSub, found := strings.Cut(want, "/")
		return found && wantSub == sub
	}
	return false
}

func urlCovers(owner, want string) bool {
	if owner == want {
		return true
	}
	return strings.HasSuffix(owner, "*") && strings.HasPrefix(want, strings.TrimRight(owner, "*"))
}
