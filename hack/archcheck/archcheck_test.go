package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Each case plants files in a copy of testdata/clean, a small module shaped
// like minik8s that breaks no rule, and expects exactly the violations its
// lines mark with `// want RULE` (several rules separated by spaces).
var cases = []struct {
	name  string
	files map[string]string
}{
	{"clean", nil},
	{"component imports another component", map[string]string{
		"kubelet/bad.go": `package kubelet

import (
	"minik8s/apiserver" // want component-imports
	"minik8s/kubelet/runtime"
	"minik8s/pkg/lib"
)

var _ runtime.Runtime
var _ = lib.Phase
var _ = apiserver.Serve
`,
		"controller/other/bad.go": `package other

import (
	as "minik8s/apiserver/auth" // want component-imports
	_ "minik8s/cluster"         // want component-imports
)

var _ = as.X
`,
		"apiserver/auth/x.go": `package auth

var X int
`,
		// What main holds until kubelet/runtime moves to pkg/.
		"mkctl/image.go": `package mkctl

import "minik8s/kubelet/runtime" // want component-imports

var _ runtime.Runtime
`,
	}},
	{"room imports its parent or a room it does not stand on", map[string]string{
		// The parent's code in a room: the floors would be upside down.
		"apiserver/audit/up.go": `package audit

import "minik8s/apiserver" // want room-imports

var _ = apiserver.Serve
`,
		// A room beside it, not below it.
		"apiserver/funcapi/side.go": `package funcapi

import (
	"minik8s/apiserver/auth"     // want room-imports
	"minik8s/apiserver/registry" // below funcapi: allowed
)

var _ = auth.Allowed
var _ = registry.Get
`,
		"apiserver/registry/registry.go": `package registry

import (
	"minik8s/apiserver/auth" // below the registry: allowed
	"minik8s/pkg/lib"
)

var _ = auth.Allowed
var _ = lib.Phase

func Get() {}
`,
		// A room's own subpackage, and a room's test importing the parent.
		"funcrunner/trigger/queue/q.go": `package queue

var Q int
`,
		"funcrunner/trigger/t.go": `package trigger

import "minik8s/funcrunner/trigger/queue"

var _ = queue.Q
`,
		"apiserver/audit/up_test.go": `package audit

import "minik8s/apiserver"

var _ = apiserver.Serve
`,
	}},
	{"library imports a component or a test package", map[string]string{
		"images/import.go": `package images

import "minik8s/kubelet/runtime" // want library-imports

var _ runtime.Runtime
`,
		"pkg/leaf/bad.go": `package leaf

import (
	_ "minik8s/apiserver/auth" // want library-imports
	_ "minik8s/cluster"        // want library-imports
	_ "minik8s/test/harness"   // want library-imports
)
`,
	}},
	{"library test imports what starts components", map[string]string{
		"pkg/leaf/leaf.go": `package leaf
`,
		"pkg/leaf/main_test.go": `package leaf

import (
	"testing"

	"minik8s/test/framework" // want library-test-imports
)

func TestMain(m *testing.M) { framework.Start(nil) }
`,
		"pkg/leaf/x_test.go": `package leaf_test

import (
	_ "minik8s/apiserver" // want library-test-imports
	_ "minik8s/test/dirty" // want library-test-imports
	_ "minik8s/test/harness"
)
`,
		// A harness that reaches a component through another test package.
		"test/dirty/dirty.go": `package dirty

import _ "minik8s/test/framework"
`,
	}},
	{"unclassified top-level directory", map[string]string{
		"utils/utils.go": `package utils // want layout
`,
	}},
	{"status written outside its owner", map[string]string{
		"apiserver/registry/status.go": `package registry

import (
	a "minik8s/pkg/api"
)

type inst = a.FuncInstance // an alias is the same type
type mine a.FuncInstance   // a defined type has the same Status type

var global a.FuncInstanceStatus

func writes(x *inst, m *mine, f *a.Func, list []a.FuncInstance, st *a.FuncInstanceStatus, n int) {
	x.Status.Phase = "Running"                     // want status-owner
	x.Status.Phase, n = "Running", 1               // want status-owner
	x.Status = a.FuncInstanceStatus{}              // the apiserver's registry may reset a status
	x.Status = a.FuncInstanceStatus{Phase: "x"}    // want status-owner
	x.Status.Trace = append(x.Status.Trace, a.FuncSpan{}) // want status-owner
	x.Status.Trace[0] = a.FuncSpan{}               // want status-owner
	x.Status.Trace[0].Name = "s"                   // want status-owner
	(x.Status.Next).Function = "g"                 // want status-owner
	x.Status.Hops += 2                             // want status-owner
	x.Status.Hops++                                // want status-owner
	p := &x.Status                                 // want status-owner
	p.Phase = "Failed"                             // want status-owner
	q := &x.Status.Hops                            // want status-owner
	*q = 3
	m.Status.Phase = "Running"                     // want status-owner
	list[0].Status.Hops = 1                        // want status-owner
	st.Phase = "Running"                           // want status-owner
	*st = global                                   // want status-owner
	global.Phase = "x"                             // want status-owner
	x.Status.Reset()                               // want status-owner
	for x.Status.Hops = range 3 {                  // want status-owner
	}
	var e struct{ *a.FuncInstance }
	e.Status.Hops = 1 // want status-owner
	var w struct{ a.FuncInstanceStatus }
	w.Phase = "x" // want status-owner
	c := x.Status
	c.Phase = "a local copy"
	c.Next.Function = "shared with x" // want status-owner
	c.Trace[0].Name = "shared with x" // want status-owner
	f.Status.Counter = n                           // want status-owner
	f.Status = a.FuncStatus{}                      // a reset again
	f.Status, n = a.FuncStatus{}, 2                // a reset again
}

func builds(st a.FuncInstanceStatus) []a.FuncInstance {
	_ = &a.FuncInstanceStatus{Hops: 1}                        // want status-owner
	_ = a.FuncInstance{Status: a.FuncInstanceStatus{Phase: "x"}} // want status-owner
	_ = a.Func{Name: "f", Status: a.FuncStatus{Counter: 1}}  // want status-owner
	return []a.FuncInstance{
		{Name: "i"},
		{Status: st}, // want status-owner
	}
}
`,
		// The Func owner may not write a FuncInstance's status.
		"controller/functions/bad.go": `package functions

import "minik8s/pkg/api"

func steal(inst *api.FuncInstance) { inst.Status.Phase = "" } // want status-owner

// Only the apiserver's registry resets a status.
func wipe(inst *api.FuncInstance) { inst.Status = api.FuncInstanceStatus{} } // want status-owner
`,
		// A library other than the owner neither (defaults, validation).
		"pkg/lib/defaults.go": `package lib

import "minik8s/pkg/api"

func Default(inst *api.FuncInstance) {
	if inst.Status.Phase == "" {
		inst.Status.Phase = "Pending" // want status-owner
	}
	validate(&inst.Status) // want status-owner
}

func validate(*api.FuncInstanceStatus) {}
`,
	}},
}

var wantRE = regexp.MustCompile(`// want ([a-z -]+)$`)

func TestCheck(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("testdata/clean")); err != nil {
				t.Fatal(err)
			}
			var want []string
			for name, src := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				for i, line := range strings.Split(src, "\n") {
					if m := wantRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
						for _, r := range strings.Fields(m[1]) {
							want = append(want, fmt.Sprintf("%s:%d [%s]", name, i+1, r))
						}
					}
				}
			}
			vs, err := check(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				if v.fix == "" || v.msg == "" {
					t.Errorf("%v: no message or fix", v)
				}
				g := fmt.Sprintf("%s [%s]", v.pos, v.rule)
				if !slices.Contains(got, g) { // one line may break a rule twice
					got = append(got, g)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("violations:\n\tgot  %s\n\twant %s\nreport:\n%s", strings.Join(got, "\n\t     "), strings.Join(want, "\n\t     "), report(vs))
			}
		})
	}
}

func report(vs []violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintln(&b, v)
	}
	return b.String()
}

// The check stops, rather than passing, when its table names a type the
// module does not declare (a rename must update the table).
func TestUnknownOwnedType(t *testing.T) {
	saved := statusOwners
	t.Cleanup(func() { statusOwners = saved })
	statusOwners = map[string][]string{"minik8s/pkg/api.Gone": {"minik8s/pkg/function/call"}}
	if _, err := check("testdata/clean", nil); err == nil || !strings.Contains(err.Error(), "Gone") {
		t.Fatalf("check = %v, want an error naming the missing type", err)
	}
}

// -skip leaves a rule out.
func TestSkip(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/clean")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubelet/pod/bad.go"), []byte("package pod\n\nimport _ \"minik8s/apiserver\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for skip, n := range map[string]int{"": 1, ruleComponent: 0} {
		vs, err := check(dir, []string{skip, ruleStatusOwner})
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != n {
			t.Errorf("skip %q: %d violations, want %d:\n%s", skip, len(vs), n, report(vs))
		}
	}
}
