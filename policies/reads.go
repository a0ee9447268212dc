package policies

import (
	"context"
	"slices"
	"strings"
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
//   - object.remove(input..., keys), keys constant (literal, or a rule whose
//     value is a constant), reads that path less those keys: a rule that
//     sees the boot params only less the loader's (root=UUID=..., the
//     host's own) is shared by hosts that differ there only;
//   - input used whole (x := input, walk(input), input[k]) reads everything;
//   - a rule or function reached through data, also by a computed key
//     (data.lib[k] reaches every rule below data.lib), adds what it reads.
//
// A rule that partial evaluation with input unknown reduces to a value (in
// fleet gpu-training, unknown-fleet is the empty set whatever the host)
// reads nothing in that fleet: checked when the engine is made for a rule
// that reads the host's name, and for any other once it keeps meeting new
// inputs (Queries.Missed).

// peBudget bounds the partial evaluation of one rule in one fleet.
const peBudget = 2 * time.Second

// inputPath is one constant path into the input.
type inputPath []*ast.Term

// ruleReads is what one rule reads: paths, or the whole input.
type ruleReads struct {
	whole bool
	paths []inputPath
	// less[i] are the keys of the object at paths[i] the rule never sees
	// (sorted; nil: it sees all). less is nil when no path has any.
	less [][]string
	// names are the paths as text (ast.Ref's, " less " and the keys left
	// out), set by named.
	names []string
}

// named returns r with the names of its paths.
func (r ruleReads) named() ruleReads {
	r.names = make([]string, len(r.paths))
	for i, p := range r.paths {
		r.names[i] = ast.Ref(p).String()
		if keys := r.lessAt(i); keys != nil {
			r.names[i] += " less " + strings.Join(keys, ",")
		}
	}
	return r
}

// lessAt is the keys path i is read without (nil: none).
func (r ruleReads) lessAt(i int) []string {
	if r.less == nil {
		return nil
	}
	return r.less[i]
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

var (
	objectGet    = ast.Ref{ast.VarTerm("object"), ast.StringTerm("get")}
	objectRemove = ast.Ref{ast.VarTerm("object"), ast.StringTerm("remove")}
	isObject     = ast.Ref{ast.VarTerm("is_object")}
)

// staticReads finds the input paths rule ref reads in compiler c.
func staticReads(c *ast.Compiler, ref ast.Ref) ruleReads {
	var out ruleReads
	seen := map[*ast.Rule]bool{}
	work := slices.Clone(c.GetRules(ref))
	// less: the keys of the object at p the read leaves out (nil: none).
	addLess := func(p inputPath, less []string) {
		if len(p) == 0 {
			out.whole = true
			return
		}
		for i, q := range out.paths {
			if pathEqual(q, p) {
				// Read twice: what either read sees.
				out.less[i] = intersect(out.less[i], less)
				return
			}
		}
		out.paths = append(out.paths, p)
		out.less = append(out.less, less)
	}
	add := func(p inputPath) { addLess(p, nil) }
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
		// dataAliases are locals bound to a data ref
		// (__local__ = data.x.keys; object.remove(..., __local__, ...)).
		dataAliases := map[ast.Var]*ast.Term{}
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
			if v, ok := x.Value.(ast.Var); ok && isDataRef(y) {
				dataAliases[v] = y
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
		// aliasLess are the keys each object.remove of an alias leaves out;
		// typeTests count its is_object tests (the guard object.remove
		// needs), which the digest of the object less keys covers: a value
		// that is not an object is keyed whole.
		aliasLess := map[ast.Var][][]string{}
		typeTests := map[ast.Var]int{}
		// remove is object.remove(obj, keys): when obj is a constant input
		// ref (or an alias of one) and keys constant, the rule sees that
		// path less those keys.
		remove := func(obj, keys *ast.Term) {
			if v, ok := keys.Value.(ast.Var); ok && dataAliases[v] != nil {
				keys = dataAliases[v]
			}
			less, ok := constantKeys(c, keys)
			if !ok {
				return
			}
			if v, ok := obj.Value.(ast.Var); ok && aliases[v] != nil {
				if _, ok := constPath(aliases[v]); ok {
					aliasLess[v] = append(aliasLess[v], less)
				}
				return
			}
			if p, ok := constPath(obj); ok {
				addLess(p, less)
				done[obj] = true
			}
		}
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
			if e.IsCall() && e.Operator().Equal(isObject) && len(e.Operands()) == 1 {
				if v, ok := e.Operand(0).Value.(ast.Var); ok && aliases[v] != nil {
					typeTests[v]++
				}
			}
			if !e.IsCall() || len(e.Operands()) < 2 {
				return false
			}
			switch {
			case e.Operator().Equal(objectGet):
				get(e.Operand(0), e.Operand(1))
			case e.Operator().Equal(objectRemove):
				remove(e.Operand(0), e.Operand(1))
			}
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
			if uses[v] != 1+len(ps) || len(aliasLess[v]) > 0 || typeTests[v] > 0 {
				continue
			}
			for _, p := range ps {
				add(p)
			}
			done[aliases[v]] = true
		}
		for v, ls := range aliasLess {
			if uses[v] != 1+len(ls)+typeTests[v] || len(aliasPaths[v]) > 0 {
				continue
			}
			p, _ := constPath(aliases[v])
			for _, less := range ls {
				addLess(p, less)
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
		out.paths, out.less = nil, nil
	}
	if !slices.ContainsFunc(out.less, func(l []string) bool { return l != nil }) {
		out.less = nil
	}
	return out
}

// constPath is the input path of t, an input ref whose every element is
// a constant key.
func constPath(t *ast.Term) (inputPath, bool) {
	ref, ok := t.Value.(ast.Ref)
	if !ok || !isInputRef(t) {
		return nil, false
	}
	p, ok := constPrefix(ref)
	return p, ok && len(p) > 0
}

func isDataRef(t *ast.Term) bool {
	ref, ok := t.Value.(ast.Ref)
	return ok && len(ref) > 0 && ref[0].Equal(ast.DefaultRootDocument)
}

// constantKeys are the keys object.remove's second operand names, sorted:
// a set or array of strings, written out or the value of a rule that is
// that and nothing else (loader_params := {...}).
func constantKeys(c *ast.Compiler, t *ast.Term) ([]string, bool) {
	if ref, ok := t.Value.(ast.Ref); ok && isDataRef(t) {
		rules := c.GetRules(ref)
		if len(rules) != 1 || !constantRule(rules[0], ref) {
			return nil, false
		}
		t = rules[0].Head.Value
	}
	var keys []string
	ok := true
	each := func(k *ast.Term) {
		s, isString := k.Value.(ast.String)
		ok = ok && isString
		keys = append(keys, string(s))
	}
	switch v := t.Value.(type) {
	case ast.Set:
		v.Foreach(each)
	case *ast.Array:
		v.Foreach(each)
	default:
		return nil, false
	}
	if !ok || len(keys) == 0 {
		return nil, false
	}
	slices.Sort(keys)
	return slices.Compact(keys), true
}

// constantRule reports whether r is the whole document at ref: a complete
// rule with no arguments, no condition and no else, whose value is ground.
func constantRule(r *ast.Rule, ref ast.Ref) bool {
	h := r.Head
	if r.Else != nil || len(h.Args) > 0 || h.Value == nil || !h.Value.IsGround() || h.RuleKind() != ast.SingleValue ||
		!r.Ref().Equal(ref) || len(r.Body) != 1 {
		return false
	}
	e := r.Body[0]
	t, ok := e.Terms.(*ast.Term)
	return ok && !e.Negated && len(e.With) == 0 && ast.Boolean(true).Equal(t.Value)
}

// intersect is the keys both lists leave out (nil when either is nil).
func intersect(a, b []string) []string {
	if a == nil || b == nil {
		return nil
	}
	var out []string
	for _, k := range a {
		if slices.Contains(b, k) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil
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
// evaluation leaves the query r0 = value and nothing else. An error means no, and so does
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
	if err != nil || pq == nil || len(pq.Queries) != 1 || len(pq.Support) > 0 {
		return false
	}
	// A value: no reference left, to input or to a rule kept as support
	// (which may read input: data.partial...boot_param_forbidden's
	// support reads forbidden_hits), nor a call.
	refs := false
	visit := func(t *ast.Term) bool {
		switch t.Value.(type) {
		case ast.Ref, ast.Call:
			refs = true
		}
		return refs
	}
	for _, e := range pq.Queries[0] {
		if !e.IsEquality() || e.Negated || len(e.With) > 0 {
			return false
		}
		for _, op := range e.Operands() {
			ast.WalkTerms(op, visit)
		}
	}
	return !refs
}

// readsOf is the reads of a fleet's host rules, by rule index.
type readsOf []ruleReads
