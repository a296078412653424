// Package labels parses and matches label selectors in kubectl's syntax:
// "app=web,tier!=db,env in (prod,dev),!canary,owner".
//
// The parsing, validation and matching are k8s.io/apimachinery's; this
// package keeps the small API the rest of minik8s uses, and a Selector is a
// plain slice so that a nil Selector selects everything.
package labels

import (
	"fmt"
	"sort"
	"strings"

	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"minik8s/pkg/api"
)

// Selector matches a label set when every requirement holds; the empty (or
// nil) selector matches everything. Its requirements are sorted by key, as
// apimachinery keeps them, so String is canonical.
type Selector []k8slabels.Requirement

// Matches reports whether the labels satisfy every requirement.
func (s Selector) Matches(set map[string]string) bool {
	ls := k8slabels.Set(set)
	for i := range s {
		if !s[i].Matches(ls) {
			return false
		}
	}
	return true
}

// Empty reports whether the selector selects everything.
func (s Selector) Empty() bool { return len(s) == 0 }

// String writes the selector in kubectl's syntax, as apimachinery's
// Selector.String does: requirements by key joined by ",", the values of in
// and notin sorted. (Requirements.String would join them by ", ".)
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i := range s {
		parts[i] = s[i].String()
	}
	return strings.Join(parts, ",")
}

// SelectorFromSet selects objects carrying all of the given labels. The set
// is not validated (validation of stored objects does that), as with
// apimachinery's SelectorFromValidatedSet.
func SelectorFromSet(set map[string]string) Selector {
	return fromK8s(k8slabels.SelectorFromValidatedSet(set))
}

// FromLabelSelector converts the API form as metav1.LabelSelectorAsSelector
// does: matchLabels are equality requirements, matchExpressions take In,
// NotIn, Exists and DoesNotExist, and keys and values are validated. A nil
// selector selects nothing in Kubernetes; it is reported as an error so
// callers do not treat it as "everything".
func FromLabelSelector(ls *api.LabelSelector) (Selector, error) {
	if ls == nil {
		return nil, fmt.Errorf("selector is missing")
	}
	s := make(Selector, 0, len(ls.MatchLabels)+len(ls.MatchExpressions))
	for k, v := range ls.MatchLabels {
		r, err := k8slabels.NewRequirement(k, selection.Equals, []string{v})
		if err != nil {
			return nil, fmt.Errorf("matchLabels[%q]: %v", k, err)
		}
		s = append(s, *r)
	}
	for i, e := range ls.MatchExpressions {
		var op selection.Operator
		switch e.Operator {
		case "In":
			op = selection.In
		case "NotIn":
			op = selection.NotIn
		case "Exists":
			op = selection.Exists
		case "DoesNotExist":
			op = selection.DoesNotExist
		default:
			return nil, fmt.Errorf("matchExpressions[%d]: unknown operator %q (want In, NotIn, Exists, DoesNotExist)", i, e.Operator)
		}
		r, err := k8slabels.NewRequirement(e.Key, op, append([]string(nil), e.Values...))
		if err != nil {
			return nil, fmt.Errorf("matchExpressions[%d]: %v", i, err)
		}
		s = append(s, *r)
	}
	sort.Stable(k8slabels.ByKey(s))
	return s, nil
}

// Parse reads kubectl's selector syntax with apimachinery's parser: anything
// it does not read whole, such as "a=b=c", is an error. "key in ()" is an
// error too (apimachinery reads it as the empty value), as it always was here.
func Parse(text string) (Selector, error) {
	reqs, err := k8slabels.ParseToRequirements(text)
	if err != nil {
		return nil, fmt.Errorf("selector %q: %v", text, err)
	}
	for i := range reqs {
		r := &reqs[i]
		switch r.Operator() {
		case selection.In, selection.NotIn:
			if v := r.ValuesUnsorted(); len(v) == 1 && v[0] == "" {
				return nil, fmt.Errorf("selector %q: %s %s needs at least one value", text, r.Key(), strings.ToLower(string(r.Operator())))
			}
		}
	}
	return Selector(reqs), nil
}

func fromK8s(sel k8slabels.Selector) Selector {
	reqs, _ := sel.Requirements()
	return Selector(reqs)
}
