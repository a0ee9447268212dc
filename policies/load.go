package policies

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
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

// parsePolicies parses the built-in library and the modules and data of
// dirs (userPolicies), tests left out.
func parsePolicies(dirs []string, caps *ast.Capabilities) (map[string]*ast.Module, map[string]any, error) {
	mods, err := builtinModules(caps, false)
	if err != nil {
		return nil, nil, err
	}
	userMods, docs, err := userPolicies(dirs, caps, false)
	if err != nil {
		return nil, nil, err
	}
	for name, m := range userMods {
		if _, ok := mods[name]; ok {
			return nil, nil, fmt.Errorf("policy file %s has the name of a built-in file; built-in rules load already", name)
		}
		mods[name] = m
	}
	return mods, docs, nil
}

// userPolicies loads Rego modules and data files (.json, .yaml, .yml) from
// the given directories or files, as `opa eval -d` would. Hidden entries are
// skipped, and so are _test.rego files unless withTests.
func userPolicies(paths []string, caps *ast.Capabilities, withTests bool) (map[string]*ast.Module, map[string]any, error) {
	if len(paths) == 0 {
		return nil, nil, nil
	}
	res, err := loader.NewFileLoader().
		WithFS(policyFiles{}).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotation(true).
		WithCapabilities(caps).
		Filtered(paths, func(p string, info fs.FileInfo, depth int) bool {
			if depth == 0 {
				return !info.IsDir() && !withTests && isTestFile(info.Name())
			}
			if strings.HasPrefix(info.Name(), ".") {
				return true
			}
			if info.IsDir() {
				// Links to directories may loop (two links to ".." made
				// the walk exponential): only the tree itself is read.
				l, err := os.Lstat(p)
				return err == nil && l.Mode()&fs.ModeSymlink != 0
			}
			// The loader reads every file of a directory and then ignores
			// those it does not know (a FIFO among them blocked it): skip
			// them unread.
			return !isPolicyFile(info.Name()) || (!withTests && isTestFile(info.Name()))
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

// isPolicyFile tells the files the loader loads from a directory: Rego,
// data (JSON, YAML) and bundle tarballs.
func isPolicyFile(name string) bool {
	switch path.Ext(name) {
	case ".rego", ".json", ".yaml", ".yml":
		return true
	}
	return strings.HasSuffix(name, ".tar.gz")
}

// maxPolicyFileSize caps each file read from --policies, Rego or data. A data
// file is decoded whole into values many times its size (a 300 MB data.json
// took 12 GB), so one larger than this is refused.
const maxPolicyFileSize = 64 << 20

// policyFiles is the file system the loader reads --policies through: names
// are the local paths the user gave (the loader joins them with
// filepath.Join, so they are not io/fs names). Only regular files are read,
// a FIFO or device never opened for reading, and each read is capped.
type policyFiles struct{}

func (policyFiles) Open(name string) (fs.File, error)          { return safeio.OpenFileOrDir(name) }
func (policyFiles) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (policyFiles) ReadDir(name string) ([]fs.DirEntry, error) { return safeio.ReadDir(name) }

func (policyFiles) ReadFile(name string) ([]byte, error) {
	data, err := safeio.ReadFile(name, maxPolicyFileSize)
	if errors.Is(err, safeio.ErrTooLarge) {
		return nil, fmt.Errorf("%s: %w: policy and data files are limited to %d MiB each", name, safeio.ErrTooLarge, maxPolicyFileSize>>20)
	}
	return data, err
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
