package policies

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine core is package policies; the runner is policies/fleetrun,
// which imports it. Go's import graph keeps the core from using the
// runner (a cycle does not compile); this test says so where a reader of
// the core looks, and fails should a core file import the runner or
// anything below it.
func TestCoreImportsNoRunner(t *testing.T) {
	const runner = "github.com/fleetaudit/fleetaudit/policies/fleetrun"
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == runner || strings.HasPrefix(p, runner+"/") {
				t.Errorf("%s imports the runner %s", name, p)
			}
		}
	}
}

// runner.go exports from the core only what the runner uses: each name it
// declares (types, functions, methods) is named in policies/fleetrun; an
// interface, by the runner's methods that implement it.
func TestRunnerExportsAreUsed(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "runner.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			exported = append(exported, d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					for _, m := range it.Methods.List {
						for _, n := range m.Names {
							exported = append(exported, n.Name)
						}
					}
					continue
				}
				exported = append(exported, ts.Name.Name)
			}
		}
	}
	used := map[string]bool{}
	runnerFiles, err := filepath.Glob("fleetrun/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range runnerFiles {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rf, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(rf, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				used[id.Name] = true
			}
			return true
		})
	}
	for _, name := range exported {
		if ast.IsExported(name) && !used[name] {
			t.Errorf("runner.go exports %s, which policies/fleetrun does not use", name)
		}
	}
}
