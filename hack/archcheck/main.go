// Command archcheck checks the rules of the house that go vet does not:
// which layer of the module may import which, and which package may write
// the status of the API's function objects. `make vet` runs it; it prints
// each violation as file:line, the rule and the fix, and exits 1 if any.
//
// The tables it checks are in rules.go; docs/design.md says why.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type violation struct {
	pos, rule, msg, fix string
}

func (v violation) String() string {
	return fmt.Sprintf("%s: [%s] %s\n\tfix: %s", v.pos, v.rule, v.msg, v.fix)
}

func main() {
	dir := flag.String("C", ".", "the module's root `directory`")
	skip := flag.String("skip", "", "comma-separated `rules` not to check (imports: layout, component-imports, room-imports, library-imports, library-test-imports; status: status-owner)")
	flag.Parse()
	vs, err := check(*dir, strings.Split(*skip, ","))
	if err != nil {
		fmt.Fprintln(os.Stderr, "archcheck:", err)
		os.Exit(2)
	}
	for _, v := range vs {
		fmt.Println(v)
	}
	if len(vs) > 0 {
		fmt.Printf("archcheck: %d violation(s) of the rules in docs/design.md (\"Rules checked by `make vet`\")\n", len(vs))
		os.Exit(1)
	}
}

// check runs the rules not in skip on the module rooted at dir.
func check(dir string, skip []string) ([]violation, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	modPath, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	skipped := map[string]bool{}
	for _, r := range skip {
		skipped[strings.TrimSpace(r)] = true
	}
	files, err := parseImports(root, modPath)
	if err != nil {
		return nil, err
	}
	vs := checkImports(files, modPath)
	if !skipped[ruleStatusOwner] {
		pkgs, err := loadTyped(root)
		if err != nil {
			return nil, err
		}
		owns, err := resolveOwned(pkgs)
		if err != nil {
			return nil, err
		}
		vs = append(vs, checkStatus(pkgs, owns, root, modPath)...)
	}
	var out []violation
	seen := map[violation]bool{}
	for _, v := range vs {
		if !skipped[v.rule] && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].rule != out[j].rule {
			return out[i].rule < out[j].rule
		}
		return lessPos(out[i].pos, out[j].pos)
	})
	return out, nil
}

// lessPos orders file:line by file, then by line as a number.
func lessPos(a, b string) bool {
	fa, la, _ := strings.Cut(a, ":")
	fb, lb, _ := strings.Cut(b, ":")
	if fa != fb {
		return fa < fb
	}
	if len(la) != len(lb) {
		return len(la) < len(lb)
	}
	return la < lb
}

func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod names no module", root)
}
