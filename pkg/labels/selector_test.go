package labels

import (
	"testing"

	"minik8s/pkg/api"
)

func TestParseAndMatch(t *testing.T) {
	set := map[string]string{"app": "web", "tier": "front", "env": "prod"}
	tests := []struct {
		sel   string
		match bool
	}{
		{"", true},
		{"app=web", true},
		{"app==web", true},
		{"app=db", false},
		{"app!=db", true},
		{"missing!=x", true},
		{"app=web,tier=front", true},
		{"app=web,tier=back", false},
		{"env in (prod,dev)", true},
		{"env in (dev)", false},
		{"env notin (dev, test)", true},
		{"env notin (prod)", false},
		{"tier", true},
		{"missing", false},
		{"!missing", true},
		{"!app", false},
		{" app = web , env in ( prod ) ", true},
	}
	for _, tc := range tests {
		s, err := Parse(tc.sel)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.sel, err)
		}
		if got := s.Matches(set); got != tc.match {
			t.Errorf("%q matches = %v, want %v", tc.sel, got, tc.match)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, sel := range []string{"=web", "app in web", "app in ()", "a b=c", "!"} {
		if _, err := Parse(sel); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", sel)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, sel := range []string{"app=web", "a!=b", "env in (a,b)", "env notin (c)", "k", "!k", "app=web,k"} {
		s, err := Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != sel {
			t.Errorf("String() = %q, want %q", s.String(), sel)
		}
	}
}

func TestFromLabelSelector(t *testing.T) {
	if _, err := FromLabelSelector(nil); err == nil {
		t.Error("nil selector must be an error, not select everything")
	}
	s, err := FromLabelSelector(&api.LabelSelector{
		MatchLabels:      map[string]string{"b": "2", "a": "1"},
		MatchExpressions: []api.LabelSelectorRequirement{{Key: "c", Operator: "In", Values: []string{"x", "y"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != "a=1,b=2,c in (x,y)" {
		t.Errorf("String() = %q", s.String())
	}
	if !s.Matches(map[string]string{"a": "1", "b": "2", "c": "y"}) || s.Matches(map[string]string{"a": "1", "b": "2"}) {
		t.Error("wrong match")
	}
	for _, bad := range []api.LabelSelectorRequirement{
		{Key: "c", Operator: "In"},
		{Key: "c", Operator: "Exists", Values: []string{"x"}},
		{Key: "c", Operator: "Near", Values: []string{"x"}},
	} {
		if _, err := FromLabelSelector(&api.LabelSelector{MatchExpressions: []api.LabelSelectorRequirement{bad}}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
