package main

// The tables the checks read. Change them here, with a line in
// docs/design.md ("Rules checked by `make vet`") saying why.

// A layer is what a top-level directory of the module is allowed to import.
type layer int

const (
	// component: one program's code. It imports its own subpackages and
	// libraries, never another component: components talk through the API.
	component layer = iota + 1
	// library: shared code (pkg/ and its like). It imports libraries only,
	// so any component can use it without pulling in another component.
	library
	// wiring: the all-in-one, the mains and the tests, which put components
	// together and may import any of them.
	wiring
	// tool: the repository's own tools (hack/), outside these rules.
	tool
)

func (l layer) String() string {
	switch l {
	case component:
		return "component"
	case library:
		return "library"
	case wiring:
		return "wiring"
	case tool:
		return "tool"
	}
	return "unclassified"
}

// layers classifies every top-level directory holding Go code; a new one
// fails the check until it is added here.
//
// images/ builds the project's images; mkctl, the all-in-one and the tests
// all use it, so it is held to the library rule (it imports no component),
// like pkg/.
var layers = map[string]layer{
	"apiserver":  component,
	"controller": component,
	"funcrunner": component,
	"funcserver": component,
	"kubelet":    component,
	"mkctl":      component,
	"scheduler":  component,

	"images": library,
	"pkg":    library,

	"cluster": wiring,
	"cmd":     wiring,
	"test":    wiring,

	"hack": tool,
}

// statusOwners names, for each API type (import path "." name), the only
// packages whose non-test code may write its Status: assign it or any field
// under it, take its address, or build a value of its status type. The
// package declaring the type (its copies and conversions) may too.
// Code under test/ and in _test.go files is not checked.
var statusOwners = map[string][]string{
	"minik8s/pkg/api.FuncInstance": {"minik8s/pkg/function/call"},
	"minik8s/pkg/api.Func":         {"minik8s/controller/functions"},
}

// statusResetters may reset a whole owned status to its zero value
// (`x.Status = T{}`), and write nothing else of it: the apiserver's registry, whose
// strategies drop the status a create carries (a status is written
// through /status only, as in Kubernetes' PrepareForCreate).
var statusResetters = []string{"minik8s/apiserver/registry"}

// roomImports names, for each room of a component (a subpackage whose
// place docs/design.md states), the other packages of the same component
// its non-test code may import: the rooms below it. Anything else of the
// component (its parent package, another room) is a violation, so that
// the floors stay in order: the parent stands on the rooms, and a room on
// the ones listed here.
var roomImports = map[string][]string{
	"apiserver/registry":  {"apiserver/alloc", "apiserver/auth"},
	"apiserver/funcapi":   {"apiserver/registry"},
	"apiserver/authz":     {"apiserver/registry"},
	"apiserver/auth":      nil,
	"apiserver/fields":    nil,
	"apiserver/admission": nil,
	"apiserver/alloc":     nil,
	"apiserver/audit":     nil,
	"funcrunner/trigger":  nil,
}

// Rule names, as the report prints them.
const (
	ruleLayout       = "layout"
	ruleComponent    = "component-imports"
	ruleLibrary      = "library-imports"
	ruleLibraryTests = "library-test-imports"
	ruleRoom         = "room-imports"
	ruleStatusOwner  = "status-owner"
)
