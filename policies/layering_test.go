package policies

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// coreFiles are the engine core: compile, per-rule evaluation, coverage,
// evidence and the oracle. Every other non-test file is the runner, which
// may use the core; the core must not use the runner.
var coreFiles = []string{
	"capabilities.go", "coverage.go", "doc.go", "engine.go", "eval.go",
	"finding.go", "fleeteval.go", "identity.go", "load.go", "oracle.go",
	"params.go", "podevidence.go", "project.go", "reads.go", "rule.go",
	"runner.go", "testrun.go",
}

// TestCoreUsesNoRunner fails when a core file names something only the
// runner files declare (a function, type, variable, constant, or an
// unexported method or field). It goes by name, not by type: a name both
// sides declare is not told apart.
func TestCoreUsesNoRunner(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	core := map[string]*ast.File{}
	runner := map[string]*ast.File{}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(coreFiles, n) {
			core[n] = f
		} else {
			runner[n] = f
		}
	}
	if len(core) != len(coreFiles) {
		t.Fatalf("found %d of the %d core files", len(core), len(coreFiles))
	}
	coreTop, coreMembers := map[string]bool{}, map[string]bool{}
	for _, f := range core {
		top, members := declared(f)
		maps.Copy(coreTop, top)
		maps.Copy(coreMembers, members)
	}
	runnerTop, runnerMembers := map[string]string{}, map[string]string{}
	for file, f := range runner {
		top, members := declared(f)
		for n := range top {
			if !coreTop[n] {
				runnerTop[n] = file
			}
		}
		for n := range members {
			// Exported members (Err, Name) are told apart from those of
			// other packages' types only by type: a runner type's value
			// reaches the core through a runner name, caught above.
			if !coreMembers[n] && !ast.IsExported(n) {
				runnerMembers[n] = file
			}
		}
	}
	var bad []string
	use := func(id *ast.Ident, names map[string]string) {
		if from, ok := names[id.Name]; ok {
			bad = append(bad, fmt.Sprintf("%s: %s (declared in %s)", fset.Position(id.Pos()), id.Name, from))
		}
	}
	for _, f := range core {
		members := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				members[n.Sel] = true
				use(n.Sel, runnerMembers)
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok {
					// A field of a composite literal, or a map key.
					members[id] = true
					use(id, runnerMembers)
					use(id, runnerTop)
				}
			case *ast.Ident:
				if !members[n] {
					use(n, runnerTop)
				}
			}
			return true
		})
	}
	sort.Strings(bad)
	bad = slices.Compact(bad)
	for _, b := range bad {
		t.Errorf("core file uses the runner: %s", b)
	}
}

// declared returns the names f declares at top level (functions, types,
// variables, constants) and as members (methods, struct fields,
// interface methods).
func declared(f *ast.File) (top, members map[string]bool) {
	top, members = map[string]bool{}, map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil {
				members[d.Name.Name] = true
			} else {
				top[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					top[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						top[n.Name] = true
					}
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var fields *ast.FieldList
		switch t := n.(type) {
		case *ast.StructType:
			fields = t.Fields
		case *ast.InterfaceType:
			fields = t.Methods
		}
		if fields != nil {
			for _, fld := range fields.List {
				for _, n := range fld.Names {
					members[n.Name] = true
				}
			}
		}
		return true
	})
	return top, members
}
