package policies

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// paramsRoot is where fleet profile parameters reach Rego.
var paramsRoot = ast.MustParseRef("data.fleetaudit.params")

// Params returns the names of the fleet parameters the compiled rules read
// (built-in and user), as data.fleetaudit.params.NAME, sorted. It returns
// nil when a rule reads the parameters as a whole or with a computed key:
// then no list of names is complete, and a profile's parameters cannot be
// checked against it.
func (e *Engine) Params() []string {
	return slices.Clone(e.params)
}

// paramsRead walks the rules of modules, parsed or compiled, with their
// imports resolved (after `import data.fleetaudit.params`, params.x is
// data.fleetaudit.params.x), as compiling does.
func paramsRead(modules map[string]*ast.Module) []string {
	names := map[string]bool{}
	complete := true
	for _, mod := range modules {
		imports := map[ast.Var]ast.Ref{}
		for _, imp := range mod.Imports {
			if ref, ok := imp.Path.Value.(ast.Ref); ok && ref.HasPrefix(ast.DefaultRootRef) {
				imports[imp.Name()] = ref
			}
		}
		for _, r := range mod.Rules {
			ast.WalkRefs(r, func(ref ast.Ref) bool {
				if v, ok := ref[0].Value.(ast.Var); ok {
					if imp, ok := imports[v]; ok {
						ref = imp.Concat(ref[1:])
					}
				}
				if !ref.HasPrefix(paramsRoot) {
					return false
				}
				if len(ref) == len(paramsRoot) {
					complete = false
					return false
				}
				key, ok := ref[len(paramsRoot)].Value.(ast.String)
				if !ok {
					complete = false
					return false
				}
				names[string(key)] = true
				return false
			})
		}
	}
	if !complete {
		return nil
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
