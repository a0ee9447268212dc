package policies

import (
	"context"
	"slices"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
)

// What a host rule's findings depend on. A rule's result is a function of
// the input it reads and the fleet's data, so hosts that agree on what a
// rule reads share its result. What it reads is found in the compiled
// Rego, not taken from METADATA (facts are documentation, and a rule that
// reads more than it declares must not be reused wrongly):
//
//   - every reference to input in the rule and in the rules and functions it
//     calls, transitively, cut at its first non-constant element
//     (input.sysctl.running[k] reads input.sysctl.running);
//   - object.get(input..., [constant path], default) reads that path;
//   - input used whole (x := input, walk(input), input[k]) reads everything;
//   - a rule or function reached through data, also by a computed key
//     (data.lib[k] reaches every rule below data.lib), adds what it reads.
//
// A rule that partial evaluation with input unknown reduces to a value (in
// fleet gpu-training, unknown-fleet is the empty set whatever the host)
// reads nothing in that fleet.

// peBudget bounds the partial evaluation of one rule in one fleet.
const peBudget = 2 * time.Second

// inputPath is one constant path into the input.
type inputPath []*ast.Term

// ruleReads is what one rule reads: paths, or the whole input.
type ruleReads struct {
	whole bool
	paths []inputPath
	// names are the paths as text (ast.Ref's), set by named.
	names []string
}

// named returns r with the names of its paths.
func (r ruleReads) named() ruleReads {
	r.names = make([]string, len(r.paths))
	for i, p := range r.paths {
		r.names[i] = ast.Ref(p).String()
	}
	return r
}

// readsHost reports whether r's result may depend on the host's name.
func (r ruleReads) readsHost() bool {
	if r.whole {
		return true
	}
	for _, p := range r.paths {
		if len(p) == 0 || p[0].Equal(hostTerm) {
			return true
		}
	}
	return false
}

var hostTerm = ast.StringTerm("host")

var objectGet = ast.Ref{ast.VarTerm("object"), ast.StringTerm("get")}

// staticReads finds the input paths rule ref reads in compiler c.
func staticReads(c *ast.Compiler, ref ast.Ref) ruleReads {
	var out ruleReads
	seen := map[*ast.Rule]bool{}
	work := slices.Clone(c.GetRules(ref))
	add := func(p inputPath) {
		if len(p) == 0 {
			out.whole = true
			return
		}
		for _, q := range out.paths {
			if pathEqual(q, p) {
				return
			}
		}
		out.paths = append(out.paths, p)
	}
	for len(work) > 0 {
		r := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[r] {
			continue
		}
		seen[r] = true
		done := map[*ast.Term]bool{}
		// The compiler binds input to a local first
		// (__local__ = input; object.get(__local__, ...)): such a local
		// read only through object.get reads those paths only.
		aliases := map[ast.Var]*ast.Term{}
		ast.WalkExprs(r, func(e *ast.Expr) bool {
			if !e.IsEquality() {
				return false
			}
			x, y := e.Operand(0), e.Operand(1)
			if _, ok := y.Value.(ast.Var); ok {
				x, y = y, x
			}
			if v, ok := x.Value.(ast.Var); ok && isInputRef(y) {
				aliases[v] = y
			}
			return false
		})
		uses := map[ast.Var]int{}
		ast.WalkVars(r, func(v ast.Var) bool {
			if aliases[v] != nil {
				uses[v]++
			}
			return false
		})
		aliasPaths := map[ast.Var][]inputPath{}
		// get is object.get(obj, path, ...): when obj is a constant input
		// ref (or an alias of one) and path constant keys, it reads that
		// path only.
		get := func(obj, path *ast.Term) {
			if v, ok := obj.Value.(ast.Var); ok && aliases[v] != nil {
				if p, ok := getPath(aliases[v], path); ok {
					aliasPaths[v] = append(aliasPaths[v], p)
				}
				return
			}
			if p, ok := getPath(obj, path); ok {
				add(p)
				done[obj] = true
			}
		}
		ast.WalkExprs(r, func(e *ast.Expr) bool {
			for _, w := range e.With {
				if isInputRef(w.Target) {
					out.whole = true
				}
			}
			if !e.IsCall() || !e.Operator().Equal(objectGet) || len(e.Operands()) < 2 {
				return false
			}
			get(e.Operand(0), e.Operand(1))
			return false
		})
		// The compiler leaves a call nested in a term where its value is
		// used (some x in object.get(input, ...) becomes
		// __local__ = object.get(...)): the same read.
		ast.WalkTerms(r, func(t *ast.Term) bool {
			if c, ok := t.Value.(ast.Call); ok && len(c) >= 3 && c[0].Equal(ast.NewTerm(objectGet)) {
				get(c[1], c[2])
			}
			return false
		})
		for v, ps := range aliasPaths {
			// Each use but the binding is one of these calls.
			if uses[v] != 1+len(ps) {
				continue
			}
			for _, p := range ps {
				add(p)
			}
			done[aliases[v]] = true
		}
		var visit func(t *ast.Term) bool
		visit = func(t *ast.Term) bool {
			if done[t] {
				return true
			}
			switch v := t.Value.(type) {
			case ast.Var:
				// input itself, not through a ref: all of it.
				if v.Equal(ast.InputRootDocument.Value) {
					out.whole = true
				}
			case ast.Ref:
				switch {
				case isInputRef(t):
					p, _ := constPrefix(v)
					add(p)
					// The keys of input.x[k] are terms too: visit
					// them, not the head.
					for _, k := range v[1:] {
						ast.WalkTerms(k, visit)
					}
					return true
				case v[0].Equal(ast.DefaultRootDocument):
					// data.lib[k] may be any rule below data.lib: cut
					// at the first key that is not ground.
					g := v.GroundPrefix()
					for _, dep := range c.GetRules(g) {
						if !seen[dep] {
							work = append(work, dep)
						}
					}
				}
			}
			return false
		}
		ast.WalkTerms(r, visit)
	}
	if out.whole {
		out.paths = nil
	}
	return out
}

// getPath is the input path object.get(obj, path, ...) reads: obj a
// constant input ref, path a constant key or array of keys.
func getPath(obj, path *ast.Term) (inputPath, bool) {
	ref, ok := obj.Value.(ast.Ref)
	if !ok || !isInputRef(obj) {
		return nil, false
	}
	base, ok := constPrefix(ref)
	if !ok || len(base) != len(ref)-1 {
		return nil, false
	}
	var rest inputPath
	switch p := path.Value.(type) {
	case *ast.Array:
		full := true
		p.Foreach(func(t *ast.Term) {
			if !ast.IsConstant(t.Value) || !isScalarKey(t) {
				full = false
			}
			rest = append(rest, t)
		})
		if !full {
			return nil, false
		}
	case ast.String:
		rest = inputPath{path}
	default:
		return nil, false
	}
	return append(slices.Clone(base), rest...), true
}

func isInputRef(t *ast.Term) bool {
	ref, ok := t.Value.(ast.Ref)
	return ok && len(ref) > 0 && ref[0].Equal(ast.InputRootDocument)
}

// constPrefix is the path of an input ref up to its first non-constant
// element; ok is false when it stops early.
func constPrefix(ref ast.Ref) (inputPath, bool) {
	var p inputPath
	for _, t := range ref[1:] {
		if !isScalarKey(t) {
			return p, false
		}
		p = append(p, t)
	}
	return p, true
}

// isScalarKey reports whether t is a constant string or number: a key or
// index the projection can follow.
func isScalarKey(t *ast.Term) bool {
	switch t.Value.(type) {
	case ast.String, ast.Number:
		return true
	}
	return false
}

func pathEqual(a, b inputPath) bool {
	return slices.EqualFunc(a, b, func(x, y *ast.Term) bool { return x.Equal(y) })
}

// constantIn reports whether the prepared single-rule query of r reduces to
// a value, input unknown, in the fleet whose data store is given: partial
// evaluation leaves no reference to input. An error means no, and so does
// a rule partial evaluation cannot settle within peBudget (a user rule
// may loop): only sharing is lost.
func constantIn(ctx context.Context, c *ast.Compiler, caps *ast.Capabilities, store storage.Store, r *Rule) bool {
	ctx, cancel := context.WithTimeout(ctx, peBudget)
	defer cancel()
	body := ast.NewBody(ast.Equality.Expr(ast.VarTerm("r0"), ast.NewTerm(r.ref.Copy())))
	pq, err := rego.New(
		rego.ParsedQuery(body),
		rego.Compiler(c),
		rego.Store(store),
		rego.Capabilities(caps),
		rego.Unknowns([]string{"input"}),
	).Partial(ctx)
	if err != nil || pq == nil || len(pq.Queries) != 1 {
		return false
	}
	uses := false
	visit := func(t *ast.Term) bool {
		if isInputRef(t) {
			uses = true
		}
		return uses
	}
	for _, q := range pq.Queries {
		ast.WalkTerms(q, visit)
	}
	for _, m := range pq.Support {
		ast.WalkTerms(m, visit)
	}
	return !uses
}

// readsOf is the reads of a fleet's host rules, by rule index.
type readsOf []ruleReads
