package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// owned is one entry of statusOwners, resolved against the loaded types.
type owned struct {
	pkgPath, name string // the API type, e.g. minik8s/pkg/api, FuncInstance
	statusPkg     string // its Status field's type
	statusName    string
	owners        []string
}

// loadTyped type-checks the module's packages (not their tests: test code
// may build any status it likes).
func loadTyped(root string) ([]*packages.Package, error) {
	cfg := &packages.Config{
		Dir:   root,
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Tests: false,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("the module does not type-check (run go build ./...):\n\t%s", strings.Join(errs, "\n\t"))
	}
	return pkgs, nil
}

// resolveOwned finds each statusOwners type and the type of its Status field.
func resolveOwned(pkgs []*packages.Package) ([]owned, error) {
	byPath := map[string]*packages.Package{}
	for _, p := range pkgs {
		byPath[p.PkgPath] = p
	}
	var out []owned
	for key, owners := range statusOwners {
		i := strings.LastIndex(key, ".")
		pkgPath, name := key[:i], key[i+1:]
		p := byPath[pkgPath]
		if p == nil || p.Types.Scope().Lookup(name) == nil {
			return nil, fmt.Errorf("statusOwners names %s, which the module does not declare: update hack/archcheck/rules.go", key)
		}
		st, ok := p.Types.Scope().Lookup(name).Type().Underlying().(*types.Struct)
		var status *types.Named
		for j := 0; ok && j < st.NumFields(); j++ {
			if f := st.Field(j); f.Name() == "Status" {
				status, _ = f.Type().(*types.Named)
			}
		}
		if status == nil {
			return nil, fmt.Errorf("statusOwners names %s, which has no Status field of a named type: update hack/archcheck/rules.go", key)
		}
		o := status.Obj()
		out = append(out, owned{pkgPath: pkgPath, name: name, statusPkg: o.Pkg().Path(), statusName: o.Name(), owners: owners})
	}
	slices.SortFunc(out, func(a, b owned) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// checkStatus reports the writes of an owned type's status outside its
// owners, in the packages' non-test code outside test/.
func checkStatus(pkgs []*packages.Package, owns []owned, root, modPath string) []violation {
	var out []violation
	for _, p := range pkgs {
		if top(p.PkgPath, modPath) == "test" {
			continue
		}
		var mine []owned
		for _, o := range owns {
			if p.PkgPath != o.pkgPath && !slices.Contains(o.owners, p.PkgPath) {
				mine = append(mine, o)
			}
		}
		if len(mine) == 0 {
			continue
		}
		c := statusChecker{info: p.TypesInfo, owns: mine, reset: slices.Contains(statusResetters, p.PkgPath)}
		for _, f := range p.Syntax {
			c.file(f)
		}
		for _, w := range c.found {
			pos := p.Fset.Position(w.pos)
			rel, err := filepath.Rel(root, pos.Filename)
			if err != nil {
				rel = pos.Filename
			}
			out = append(out, violation{
				pos:  fmt.Sprintf("%s:%d", filepath.ToSlash(rel), pos.Line),
				rule: ruleStatusOwner,
				msg:  fmt.Sprintf(w.what, w.o.name+".Status") + " outside its owners: " + types.ExprString(w.expr),
				fix:  fmt.Sprintf("only %s may write it: call a function there (reading a copy is fine), or add this package to statusOwners in hack/archcheck/rules.go with the reason in docs/design.md", strings.Join(w.o.owners, " and ")),
			})
		}
	}
	return out
}

type statusWrite struct {
	pos  token.Pos
	what string
	expr ast.Expr
	o    owned
}

type statusChecker struct {
	info  *types.Info
	owns  []owned
	found []statusWrite
	// reset allows `x.Status = T{}` (statusResetters).
	reset bool
}

// isReset says whether l = r resets an owned status to its zero value.
func (c *statusChecker) isReset(l, r ast.Expr) (*ast.CompositeLit, bool) {
	sel, ok := ast.Unparen(l).(*ast.SelectorExpr)
	lit, ok2 := ast.Unparen(r).(*ast.CompositeLit)
	if !ok || !ok2 || sel.Sel.Name != "Status" || len(lit.Elts) > 0 {
		return nil, false
	}
	t := c.info.TypeOf(lit)
	for _, o := range c.owns {
		if isNamed(t, o.statusPkg, o.statusName) {
			return lit, true
		}
	}
	return nil, false
}

func (c *statusChecker) report(n ast.Node, what string, e ast.Expr, o owned) {
	c.found = append(c.found, statusWrite{pos: n.Pos(), what: what, expr: e, o: o})
}

func (c *statusChecker) file(f *ast.File) {
	// Literals already reported as a Status: value of their parent.
	seen := map[*ast.CompositeLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for i, l := range n.Lhs {
					if c.reset && n.Tok == token.ASSIGN && len(n.Rhs) == len(n.Lhs) {
						if lit, ok := c.isReset(l, n.Rhs[i]); ok {
							seen[lit] = true
							continue
						}
					}
					c.write(n, "writes %s", l)
				}
			}
		case *ast.IncDecStmt:
			c.write(n, "writes %s", n.X)
		case *ast.RangeStmt:
			if n.Tok == token.ASSIGN {
				for _, l := range []ast.Expr{n.Key, n.Value} {
					if l != nil {
						c.write(n, "writes %s", l)
					}
				}
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				c.write(n, "takes a pointer (which can write it) to %s", n.X)
			}
		case *ast.CallExpr:
			// A method with a pointer receiver called on a status takes
			// its address.
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
				if s := c.info.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
					if sig, ok := s.Obj().Type().(*types.Signature); ok && sig.Recv() != nil {
						if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
							c.write(n, "calls a pointer method on %s", sel.X)
						}
					}
				}
			}
		case *ast.CompositeLit:
			t := c.info.TypeOf(n)
			for _, o := range c.owns {
				if isNamed(t, o.pkgPath, o.name) {
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Status" {
								c.report(kv, "sets %s in a literal", kv.Value, o)
								if lit, ok := ast.Unparen(kv.Value).(*ast.CompositeLit); ok {
									seen[lit] = true
								}
							}
						}
					}
				}
				if isNamed(t, o.statusPkg, o.statusName) && !seen[n] {
					c.report(n, "builds a value of %s", n, o)
				}
			}
		}
		return true
	})
}

// write reports e if writing to it writes an owned status: if, going down
// from e through fields, indexes and dereferences, some step selects a
// field of a status (directly or through an embedded field) or the status
// itself, or dereferences a pointer to one; unless the path ends at a
// local copy of a status with nothing shared (no pointer, slice or map) on
// the way.
func (c *statusChecker) write(n ast.Node, what string, e ast.Expr) {
	shared := false // the path goes through memory a copy would share
	for x := e; ; {
		switch y := x.(type) {
		case *ast.ParenExpr:
			x = y.X
			continue
		case *ast.SelectorExpr:
			s := c.info.Selections[y]
			if s == nil || s.Kind() != types.FieldVal {
				return
			}
			if !shared && c.localCopy(y.X) {
				return
			}
			if o, ok := c.status(c.info.TypeOf(y.X)); ok {
				c.report(n, what, e, o)
				return
			}
			if o, ok := c.viaEmbedded(s); ok {
				c.report(n, what, e, o)
				return
			}
			shared = shared || s.Indirect()
			x = y.X
			continue
		case *ast.IndexExpr:
			if _, array := c.info.TypeOf(y.X).Underlying().(*types.Array); !array {
				shared = true
			}
			x = y.X
			continue
		case *ast.StarExpr:
			if o, ok := c.status(c.info.TypeOf(y.X)); ok {
				c.report(n, what, e, o)
				return
			}
			shared = true
			x = y.X
			continue
		}
		return
	}
}

// viaEmbedded says whether a field selection reaches or goes through a
// status: the field is one, or an embedded field on the way to it is.
func (c *statusChecker) viaEmbedded(s *types.Selection) (owned, bool) {
	t := s.Recv()
	for _, i := range s.Index() {
		if p, ok := t.Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			return owned{}, false
		}
		t = st.Field(i).Type()
		if o, ok := c.status(t); ok {
			return o, true
		}
	}
	return owned{}, false
}

// localCopy says whether e is a local variable (or parameter) holding a
// status by value: writing its own fields changes no object, and the copy
// reaches one only through a write this check sees (x.Status = copy).
func (c *statusChecker) localCopy(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return false
	}
	v, ok := c.info.Uses[id].(*types.Var)
	if !ok || v.IsField() || v.Parent() == nil || v.Parent() == v.Pkg().Scope() {
		return false
	}
	_, ok = c.status(v.Type())
	_, ptr := types.Unalias(v.Type()).(*types.Pointer)
	return ok && !ptr
}

// status says whether t is an owned status type or a pointer to one.
func (c *statusChecker) status(t types.Type) (owned, bool) {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	for _, o := range c.owns {
		if isNamed(t, o.statusPkg, o.statusName) {
			return o, true
		}
	}
	return owned{}, false
}

// isNamed compares by name, not identity: a package checked from source
// and one read from export data hold distinct objects for the same type.
func isNamed(t types.Type, pkgPath, name string) bool {
	t = types.Unalias(t)
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkgPath && n.Obj().Name() == name
}
