package function

import (
	"fmt"
	"testing"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"minik8s/pkg/api"
)

func TestSplitTarget(t *testing.T) {
	for _, c := range []struct {
		in string
		fn string
		n  int64
		ok bool
	}{
		{"hello", "hello", 0, true},
		{"hello@3", "hello", 3, true},
		{"a_b.C@12", "a_b.C", 12, true},
		{"hello@0", "hello", 0, false},
		{"hello@-1", "hello", 0, false},
		{"hello@x", "hello", 0, false},
		{"hello@", "hello", 0, false},
	} {
		fn, n, ok := SplitTarget(c.in)
		if fn != c.fn || n != c.n || ok != c.ok {
			t.Errorf("SplitTarget(%q) = %q %d %v, want %q %d %v", c.in, fn, n, ok, c.fn, c.n, c.ok)
		}
	}
}

// Revision and unit names are valid object names, distinct per function
// and number, whatever the function's name holds.
func TestRevisionNames(t *testing.T) {
	seen := map[string]string{}
	for _, fn := range []string{"hello", "Hello", "hello_", "a-r1", "a", "x.y", "n1"} {
		for _, n := range []int64{1, 2, 12, 123} {
			for kind, name := range map[string]string{"revision": RevisionName(fn, n), "unit": ObjectName(UnitName(fn, n))} {
				if errs := utilvalidation.IsDNS1123Subdomain(name); len(errs) > 0 {
					t.Errorf("%s name %q of %s@%d: %v", kind, name, fn, n, errs)
				}
				id := fmt.Sprintf("%s %s@%d", kind, fn, n)
				if other, ok := seen[kind+name]; ok {
					t.Errorf("%s and %s share the name %q", id, other, name)
				}
				seen[kind+name] = id
			}
		}
	}
	if ObjectName(UnitName("hello", 1)) == ObjectName("hello") {
		t.Error("a unit shares its function's object name")
	}
}

// A revision is the code and config: not the name, address, bounds or
// traffic.
func TestRevisionHash(t *testing.T) {
	one, two := 1, 2
	base := api.FuncSpec{Name: "f", Function: "YQ==", Config: map[string]string{"k": "v"}}
	same := base
	same.Name, same.ServiceAddress, same.MaxInstanceNum, same.MinInstanceNum = "g", "10.0.0.1", &two, &one
	same.Traffic = []api.FuncTrafficTarget{{Latest: true, Percent: 100}}
	if RevisionHash(&base) != RevisionHash(&same) {
		t.Error("the name, address, bounds or traffic changed the revision")
	}
	for name, change := range map[string]func(*api.FuncSpec){
		"code":    func(s *api.FuncSpec) { s.Function = "Yg==" },
		"config":  func(s *api.FuncSpec) { s.Config = map[string]string{"k": "w"} },
		"left":    func(s *api.FuncSpec) { s.Left = "other" },
		"timeout": func(s *api.FuncSpec) { s.TimeoutSeconds = &two },
	} {
		s := base
		change(&s)
		if RevisionHash(&s) == RevisionHash(&base) {
			t.Errorf("a change of %s made no new revision", name)
		}
	}
}

func TestPickRevision(t *testing.T) {
	f := &api.Func{Status: api.FuncStatus{Revision: 3}}
	if n := PickRevision(f, "x"); n != 0 {
		t.Fatalf("no traffic: picked %d, want the latest (0)", n)
	}
	f.Spec.Traffic = []api.FuncTrafficTarget{{Revision: 1, Percent: 70}, {Revision: 2, Percent: 0}, {Latest: true, Percent: 30}}
	got := map[int64]int{}
	for i := 0; i < 10000; i++ {
		key := fmt.Sprintf("call-%d/f", i)
		n := PickRevision(f, key)
		if PickRevision(f, key) != n {
			t.Fatalf("%s picked two revisions", key)
		}
		got[n]++
	}
	if got[2] != 0 || got[1] < 6700 || got[1] > 7300 || got[0] < 2700 || got[0] > 3300 {
		t.Errorf("a 70/0/30 split picked %v", got)
	}
	for n, want := range map[int64]int{1: 70, 2: 0, 3: 30, 4: 0} {
		if p := TrafficPercent(f, n); p != want {
			t.Errorf("TrafficPercent(%d) = %d, want %d", n, p, want)
		}
	}
}
