package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// goFile is one .go file of the module and the module's packages it imports.
type goFile struct {
	rel     string // slash-separated, from the module's root
	pkg     string // the directory's import path
	test    bool   // a _test.go file
	imports []importSpec
}

type importSpec struct {
	path string
	line int
}

// parseImports reads the import clauses of every .go file of the module
// rooted at root (whose path is modPath), skipping testdata, hidden
// directories and nested modules. All build tags count: a violation on
// another platform is still one.
func parseImports(root, modPath string) ([]goFile, error) {
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p == root {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		gf := goFile{rel: rel, pkg: path.Join(modPath, path.Dir(rel)), test: strings.HasSuffix(name, "_test.go")}
		for _, s := range f.Imports {
			ip, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %v", rel, err)
			}
			if inModule(ip, modPath) {
				gf.imports = append(gf.imports, importSpec{ip, fset.Position(s.Pos()).Line})
			}
		}
		files = append(files, gf)
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, err
}

func inModule(importPath, modPath string) bool {
	return importPath == modPath || strings.HasPrefix(importPath, modPath+"/")
}

// top is the top-level directory of a package of the module ("" for the
// module's root package).
func top(importPath, modPath string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, modPath), "/")
	first, _, _ := strings.Cut(rel, "/")
	return first
}

// checkImports applies the layer rules to the files' imports.
func checkImports(files []goFile, modPath string) []violation {
	var out []violation
	layerOf := func(importPath string) layer { return layers[top(importPath, modPath)] }

	// The non-test import graph, to tell a test harness that imports no
	// component (a library's tests may use it) from one that does.
	graph := map[string][]string{}
	for _, f := range files {
		if !f.test {
			for _, im := range f.imports {
				graph[f.pkg] = append(graph[f.pkg], im.path)
			}
		}
	}
	harness := map[string]bool{} // test/ package -> imports libraries only, transitively
	var isHarness func(p string, seen map[string]bool) bool
	isHarness = func(p string, seen map[string]bool) bool {
		if v, ok := harness[p]; ok {
			return v
		}
		if seen[p] { // an import cycle does not build anyway
			return false
		}
		seen[p] = true
		ok := true
		for _, im := range graph[p] {
			switch {
			case layerOf(im) == library:
			case top(im, modPath) == "test" && isHarness(im, seen):
			default:
				ok = false
			}
		}
		harness[p] = ok
		return ok
	}

	unclassified := map[string]bool{}
	for _, f := range files {
		t := top(f.pkg, modPath)
		from, ok := layers[t]
		if !ok {
			if !unclassified[t] {
				unclassified[t] = true
				out = append(out, violation{pos: f.rel + ":1", rule: ruleLayout,
					msg: fmt.Sprintf("top-level directory %q holds Go code but is in no layer", t+"/"),
					fix: "add it to the layers table in hack/archcheck/rules.go (component, library, wiring or tool)"})
			}
			continue
		}
		room := roomOf(f.pkg, modPath)
		for _, im := range f.imports {
			to := layerOf(im.path)
			pos := fmt.Sprintf("%s:%d", f.rel, im.line)
			what := fmt.Sprintf("%s %s imports %s %s", from, strings.TrimPrefix(f.pkg, modPath+"/"), to, strings.TrimPrefix(im.path, modPath+"/"))
			switch {
			case from == component && !f.test && to != library && top(im.path, modPath) != t:
				out = append(out, violation{pos: pos, rule: ruleComponent, msg: what,
					fix: "components import pkg/ only: move what both need into a pkg/ package, or define a small interface here and let cluster/ or cmd/ wire the other component in"})
			case room != "" && !f.test && top(im.path, modPath) == t && !roomMay(room, im.path, modPath):
				out = append(out, violation{pos: pos, rule: ruleRoom, msg: fmt.Sprintf("room %s imports %s", room, strings.TrimPrefix(im.path, modPath+"/")),
					fix: "a room imports libraries and the rooms below it (roomImports in hack/archcheck/rules.go), never its component's parent package or another room: move what both need down, or take it as a small interface the parent fills"})
			case from == library && !f.test && to != library:
				out = append(out, violation{pos: pos, rule: ruleLibrary, msg: what,
					fix: "libraries (pkg/, images/) import no component, cluster/, cmd/ or test/: move the code it needs into pkg/, or take it as an interface the component implements"})
			case from == library && f.test && to != library && !(top(im.path, modPath) == "test" && isHarness(im.path, map[string]bool{})):
				out = append(out, violation{pos: pos, rule: ruleLibraryTests, msg: what + " in a test",
					fix: "a library's tests import libraries and test/ packages that import no component (a harness): use such a harness, or move this test to test/"})
			}
		}
	}
	return out
}

// roomOf is the room (a key of roomImports) package importPath is in, or
// "".
func roomOf(importPath, modPath string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, modPath), "/")
	for room := range roomImports {
		if rel == room || strings.HasPrefix(rel, room+"/") {
			return room
		}
	}
	return ""
}

// roomMay tells whether room may import importPath, a package of its own
// component: its own packages, and the rooms roomImports lists.
func roomMay(room, importPath, modPath string) bool {
	to := roomOf(importPath, modPath)
	return to == room || (to != "" && slices.Contains(roomImports[room], to))
}
