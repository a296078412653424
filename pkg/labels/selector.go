// Package labels parses and matches label selectors in kubectl's syntax:
// "app=web,tier!=db,env in (prod,dev),!canary,owner".
package labels

import (
	"fmt"
	"sort"
	"strings"

	"minik8s/pkg/api"
)

// Operators of a requirement.
const (
	Equals       = "="
	NotEquals    = "!="
	In           = "In"
	NotIn        = "NotIn"
	Exists       = "Exists"
	DoesNotExist = "DoesNotExist"
)

// Requirement is one clause of a selector.
type Requirement struct {
	Key      string
	Operator string
	Values   []string
}

// Selector matches a label set when every requirement holds; the empty
// selector matches everything.
type Selector []Requirement

func (r Requirement) matches(set map[string]string) bool {
	v, ok := set[r.Key]
	switch r.Operator {
	case Equals:
		return ok && v == r.Values[0]
	case NotEquals:
		return !ok || v != r.Values[0]
	case In:
		return ok && contains(r.Values, v)
	case NotIn:
		return !ok || !contains(r.Values, v)
	case Exists:
		return ok
	case DoesNotExist:
		return !ok
	}
	return false
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Matches reports whether the labels satisfy every requirement.
func (s Selector) Matches(set map[string]string) bool {
	for _, r := range s {
		if !r.matches(set) {
			return false
		}
	}
	return true
}

// Empty reports whether the selector selects everything.
func (s Selector) Empty() bool { return len(s) == 0 }

func (s Selector) String() string {
	parts := make([]string, 0, len(s))
	for _, r := range s {
		switch r.Operator {
		case Equals, NotEquals:
			parts = append(parts, r.Key+r.Operator+r.Values[0])
		case In, NotIn:
			parts = append(parts, fmt.Sprintf("%s %s (%s)", r.Key, strings.ToLower(r.Operator), strings.Join(r.Values, ",")))
		case Exists:
			parts = append(parts, r.Key)
		case DoesNotExist:
			parts = append(parts, "!"+r.Key)
		}
	}
	return strings.Join(parts, ",")
}

// SelectorFromSet selects objects carrying all of the given labels.
func SelectorFromSet(set map[string]string) Selector {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := make(Selector, 0, len(keys))
	for _, k := range keys {
		s = append(s, Requirement{Key: k, Operator: Equals, Values: []string{set[k]}})
	}
	return s
}

// FromLabelSelector converts the API form. A nil selector selects nothing,
// as in Kubernetes, and is reported as an error so callers do not treat it
// as "everything".
func FromLabelSelector(ls *api.LabelSelector) (Selector, error) {
	if ls == nil {
		return nil, fmt.Errorf("selector is missing")
	}
	s := SelectorFromSet(ls.MatchLabels)
	for i, e := range ls.MatchExpressions {
		r := Requirement{Key: e.Key, Values: e.Values}
		switch e.Operator {
		case In, NotIn:
			if len(e.Values) == 0 {
				return nil, fmt.Errorf("matchExpressions[%d]: operator %s needs values", i, e.Operator)
			}
			r.Operator = e.Operator
		case Exists, DoesNotExist:
			if len(e.Values) != 0 {
				return nil, fmt.Errorf("matchExpressions[%d]: operator %s takes no values", i, e.Operator)
			}
			r.Operator = e.Operator
		default:
			return nil, fmt.Errorf("matchExpressions[%d]: unknown operator %q (want In, NotIn, Exists, DoesNotExist)", i, e.Operator)
		}
		s = append(s, r)
	}
	return s, nil
}

// Parse reads kubectl's selector syntax.
func Parse(text string) (Selector, error) {
	var s Selector
	for _, clause := range splitClauses(text) {
		c := strings.TrimSpace(clause)
		if c == "" {
			continue
		}
		r, err := parseClause(c)
		if err != nil {
			return nil, err
		}
		s = append(s, r)
	}
	return s, nil
}

// splitClauses splits on commas outside parentheses.
func splitClauses(text string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range text {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, text[start:i])
				start = i + 1
			}
		}
	}
	return append(out, text[start:])
}

func parseClause(c string) (Requirement, error) {
	if strings.HasPrefix(c, "!") {
		key := strings.TrimSpace(c[1:])
		if err := checkKey(key); err != nil {
			return Requirement{}, err
		}
		return Requirement{Key: key, Operator: DoesNotExist}, nil
	}
	for _, op := range []struct{ word, name string }{{" notin ", NotIn}, {" in ", In}} {
		if i := strings.Index(c, op.word); i > 0 {
			key := strings.TrimSpace(c[:i])
			rest := strings.TrimSpace(c[i+len(op.word):])
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return Requirement{}, fmt.Errorf("selector %q: values must be in parentheses", c)
			}
			var vals []string
			for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
				if v = strings.TrimSpace(v); v != "" {
					vals = append(vals, v)
				}
			}
			if err := checkKey(key); err != nil {
				return Requirement{}, err
			}
			if len(vals) == 0 {
				return Requirement{}, fmt.Errorf("selector %q: no values", c)
			}
			return Requirement{Key: key, Operator: op.name, Values: vals}, nil
		}
	}
	for _, op := range []string{"!=", "==", "="} {
		if i := strings.Index(c, op); i >= 0 {
			key := strings.TrimSpace(c[:i])
			val := strings.TrimSpace(c[i+len(op):])
			if err := checkKey(key); err != nil {
				return Requirement{}, err
			}
			name := Equals
			if op == "!=" {
				name = NotEquals
			}
			return Requirement{Key: key, Operator: name, Values: []string{val}}, nil
		}
	}
	if err := checkKey(c); err != nil {
		return Requirement{}, err
	}
	return Requirement{Key: c, Operator: Exists}, nil
}

func checkKey(k string) error {
	if k == "" {
		return fmt.Errorf("selector has an empty key")
	}
	if strings.ContainsAny(k, " ()!=,") {
		return fmt.Errorf("selector key %q has invalid characters", k)
	}
	return nil
}
