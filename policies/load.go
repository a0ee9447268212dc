package policies

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
)

// library is the built-in rule library: Rego v1, one package per rule family,
// each family file with its _test.rego beside it.
//
//go:embed lib
var library embed.FS

// Built-in files are named by their path in the repository, so errors and
// rule locations point at the file to edit.
const libraryPrefix = "policies/"

func isBuiltinFile(file string) bool { return strings.HasPrefix(file, libraryPrefix+"lib/") }

func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

func parserOptions(caps *ast.Capabilities) ast.ParserOptions {
	return ast.ParserOptions{Capabilities: caps, ProcessAnnotation: true, RegoVersion: ast.RegoV1}
}

// builtinModules parses the embedded library, with or without its tests.
func builtinModules(caps *ast.Capabilities, withTests bool) (map[string]*ast.Module, error) {
	mods := map[string]*ast.Module{}
	err := fs.WalkDir(library, "lib", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || (!withTests && isTestFile(p)) {
			return err
		}
		src, err := library.ReadFile(p)
		if err != nil {
			return err
		}
		name := libraryPrefix + p
		m, err := ast.ParseModuleWithOpts(name, string(src), parserOptions(caps))
		if err != nil {
			return err
		}
		mods[name] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("built-in policy library: %w", err)
	}
	return mods, nil
}

// userPolicies loads Rego modules and data files (.json, .yaml, .yml) from
// the given directories or files, as `opa eval -d` would. Hidden entries are
// skipped, and so are _test.rego files unless withTests.
func userPolicies(paths []string, caps *ast.Capabilities, withTests bool) (map[string]*ast.Module, map[string]any, error) {
	if len(paths) == 0 {
		return nil, nil, nil
	}
	res, err := loader.NewFileLoader().
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotation(true).
		WithCapabilities(caps).
		Filtered(paths, func(_ string, info fs.FileInfo, depth int) bool {
			if depth > 0 && strings.HasPrefix(info.Name(), ".") {
				return true
			}
			return !info.IsDir() && !withTests && isTestFile(info.Name())
		})
	if err != nil {
		return nil, nil, fmt.Errorf("load policies from %s: %w", strings.Join(paths, ", "), err)
	}
	mods := make(map[string]*ast.Module, len(res.Modules))
	for name, f := range res.Modules {
		mods[name] = f.Parsed
	}
	return mods, res.Documents, nil
}

// compile compiles modules with the engine's capabilities; print statements
// are compiled out, since library code never prints.
func compile(mods map[string]*ast.Module, caps *ast.Capabilities) (*ast.Compiler, error) {
	c := ast.NewCompiler().
		WithCapabilities(caps).
		WithEnablePrintStatements(false).
		WithDefaultRegoVersion(ast.RegoV1)
	c.Compile(mods)
	if c.Failed() {
		return nil, compileError(c.Errors)
	}
	return c, nil
}

// compileError says why a disabled builtin is undefined; each error already
// names file:line.
func compileError(errs ast.Errors) error {
	for _, e := range errs {
		fn, ok := strings.CutPrefix(e.Message, "undefined function ")
		if ok && e.Code == ast.TypeErr && disabledBuiltin(fn) {
			e.Message += " (fleetaudit policies run without http.send, net.* and opa.runtime)"
		}
	}
	return fmt.Errorf("compile policies: %w", errs)
}
