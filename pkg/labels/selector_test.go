package labels

import (
	"strings"
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
		{"app=", false},
		{"missing=", false},
		{"missing!=", true},
		{"example.com/app=web", false},
		{"app in (web,db),tier notin (back)", true},
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
	for _, sel := range []string{
		"=web", "app in web", "app in ()", "a b=c", "!",
		// Malformed selectors the hand-written parser used to accept.
		"a=b=c", "a==b==c", "a!=b=c", "a=b c", "a=(b)", "a in (b", "a in (b))", "a in (b) c",
		"a=b,", ",a=b", "a=b,,c=d", "!a=b", "!!a", "a!", "a=b!", "a=b)",
		// Keys and values Kubernetes does not allow.
		"a b", "-a=b", "a=-b", "a=b c d", "a/b/c=d", strings.Repeat("k", 64) + "=v", "a=" + strings.Repeat("v", 64),
		"a>b", "a<1.5",
	} {
		if _, err := Parse(sel); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", sel)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, sel := range []string{"app=web", "a!=b", "env in (a,b)", "env notin (c)", "k", "!k", "app=web,k", "a==b", "example.com/k=v"} {
		s, err := Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != sel {
			t.Errorf("String() = %q, want %q", s.String(), sel)
		}
	}
	// The canonical form orders requirements by key and in/notin values.
	for sel, want := range map[string]string{"k,app=web": "app=web,k", "env in (b,a)": "env in (a,b)", " a = b ": "a=b"} {
		s, err := Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != want {
			t.Errorf("Parse(%q).String() = %q, want %q", sel, s.String(), want)
		}
	}
}

func TestNilSelector(t *testing.T) {
	var s Selector
	if !s.Empty() || !s.Matches(map[string]string{"a": "b"}) || !s.Matches(nil) || s.String() != "" {
		t.Error("a nil selector must be empty and match everything")
	}
	if s := SelectorFromSet(nil); !s.Empty() || !s.Matches(map[string]string{"a": "b"}) {
		t.Error("the selector of an empty set must match everything")
	}
	s = SelectorFromSet(map[string]string{"b": "2", "a": "1"})
	if s.String() != "a=1,b=2" || !s.Matches(map[string]string{"a": "1", "b": "2", "c": "3"}) || s.Matches(map[string]string{"a": "1"}) {
		t.Errorf("SelectorFromSet: %q", s.String())
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
		{Key: "c", Operator: "NotIn"},
		{Key: "c", Operator: "DoesNotExist", Values: []string{"x"}},
		{Key: "c", Operator: "in", Values: []string{"x"}},
		{Key: "", Operator: "Exists"},
		{Key: "bad key", Operator: "Exists"},
		{Key: "c", Operator: "In", Values: []string{"not valid"}},
	} {
		if _, err := FromLabelSelector(&api.LabelSelector{MatchExpressions: []api.LabelSelectorRequirement{bad}}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := FromLabelSelector(&api.LabelSelector{MatchLabels: map[string]string{"a": "b=c"}}); err == nil {
		t.Error("matchLabels value b=c accepted")
	}
	s, err = FromLabelSelector(&api.LabelSelector{})
	if err != nil || !s.Empty() {
		t.Errorf("empty selector: %v %q, want one that selects everything", err, s.String())
	}
	s, err = FromLabelSelector(&api.LabelSelector{MatchExpressions: []api.LabelSelectorRequirement{
		{Key: "z", Operator: "DoesNotExist"}, {Key: "y", Operator: "Exists"}, {Key: "x", Operator: "NotIn", Values: []string{"2", "1"}},
	}})
	if err != nil || s.String() != "x notin (1,2),y,!z" {
		t.Errorf("expressions: %v %q", err, s.String())
	}
	if !s.Matches(map[string]string{"y": ""}) || s.Matches(map[string]string{"y": "", "z": ""}) || s.Matches(map[string]string{"x": "1", "y": ""}) {
		t.Error("wrong match for NotIn/Exists/DoesNotExist")
	}
}
