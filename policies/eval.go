package policies

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unique"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// evalWithin evaluates a scope's rules in one query within budget (0:
// none) and, when the budget runs out or a rule fails, each rule alone
// within it, returning the rules that still do not finish.
func (fq *fleetQueries) evalWithin(ctx context.Context, ps *preparedScope, input ast.Value, budget time.Duration, of hostOf, fleet string, admit admitFunc) ([]Finding, []string, error) {
	rs, err := fq.evalBudget(ctx, ps, input, budget)
	if err == nil {
		findings, err := ps.findings(rs, of, fleet, fq.severity, admit)
		return findings, nil, err
	}
	if ctx.Err() != nil {
		return nil, nil, err
	}
	// Out of budget, or a rule failed (a conflict, a builtin's error):
	// each rule alone, so one rule's failure is its own.
	var out []Finding
	var slow []string
	var errs []error
	for _, r := range ps.rules {
		one, rs, timedOut, err := fq.evalAlone(ctx, r, input, budget)
		switch {
		case ctx.Err() != nil:
			return nil, nil, ctx.Err()
		case timedOut:
			slow = append(slow, r.ID)
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		findings, err := one.findings(rs, of, fleet, fq.severity, admit)
		out = append(out, findings...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, slow, errors.Join(errs...)
}

// evalAlone evaluates rule r alone on input within budget (0: none).
// timedOut: the budget ran out. An error names the rule; when ctx is done
// the caller is to check ctx.Err() first.
func (fq *fleetQueries) evalAlone(ctx context.Context, r *Rule, input ast.Value, budget time.Duration) (one *preparedScope, rs rego.ResultSet, timedOut bool, err error) {
	one, err = fq.single(ctx, r)
	if err == nil {
		rs, err = fq.evalBudget(ctx, one, input, budget)
	}
	switch {
	case err == nil:
		return one, rs, false, nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil, nil, true, nil
	}
	return nil, nil, false, fmt.Errorf("rule %s (%s): %w", r.ID, r.Location, err)
}

// evalBudget runs a prepared query within budget (0: none). A query the
// budget stopped fails with an error wrapping context.DeadlineExceeded.
func (fq *fleetQueries) evalBudget(ctx context.Context, ps *preparedScope, input ast.Value, budget time.Duration) (rego.ResultSet, error) {
	fq.evalMu.RLock()
	defer fq.evalMu.RUnlock()
	if budget <= 0 {
		return ps.query.Eval(ctx, rego.EvalParsedInput(input))
	}
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	rs, err := ps.query.Eval(bctx, rego.EvalParsedInput(input))
	if err != nil && bctx.Err() != nil && ctx.Err() == nil {
		// OPA reports the cancellation as its own error type.
		return nil, fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
	}
	return rs, err
}

// hostOf says which host a finding value is about and which document its
// evidence resolves against.
type hostOf func(r *Rule, f map[string]any) (string, map[string]any, error)

// admitFunc says whether a finding rests on collected data; nil admits all.
type admitFunc func(r *Rule, f *Finding) bool

// findings decodes the query result; severity holds the fleet's overrides.
func (ps *preparedScope) findings(rs rego.ResultSet, of hostOf, fleet string, severity map[string]string, admit admitFunc) ([]Finding, error) {
	vals := make([][]any, len(ps.rules))
	err := ps.bindings(rs, vals)
	var out []Finding
	errs := []error{err}
	for i, r := range ps.rules {
		if vals[i] == nil {
			continue
		}
		fs, err := ruleFindings(r, vals[i], of, fleet, severity, admit, nil)
		out = append(out, fs...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// ruleFindings turns one rule's raw findings into Findings about the
// host of of, keeping those admit admits, with the fleet's severity
// overrides applied. ev resolves evidence (nil: evidence).
func ruleFindings(r *Rule, values []any, of hostOf, fleet string, severity map[string]string, admit admitFunc, ev evidenceFunc) ([]Finding, error) {
	return appendRuleFindings(nil, r, values, of, fleet, severity, admit, ev)
}

// appendRuleFindings is ruleFindings appending to out.
func appendRuleFindings(out []Finding, r *Rule, values []any, of hostOf, fleet string, severity map[string]string, admit admitFunc, ev evidenceFunc) ([]Finding, error) {
	var errs []error
	for _, v := range values {
		f, err := r.finding(v, of, fleet, ev)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %s (%s): %w", r.ID, r.Location, err))
			continue
		}
		if admit != nil && !admit(r, &f) {
			continue
		}
		if s, ok := severity[r.ID]; ok && s != f.Severity {
			f.SeverityOverride = &SeverityOverride{RuleSeverity: f.Severity, Profile: fleet}
			f.Severity = s
		}
		out = append(out, f)
	}
	return out, errors.Join(errs...)
}

// finding turns one value a rule yielded into a Finding, filling severity,
// title, remediation and references from the rule's metadata and each cited
// fact's value and source from the document.
func (r *Rule) finding(v any, of hostOf, fleet string, ev evidenceFunc) (Finding, error) {
	if ev == nil {
		ev = evidence
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Finding{}, fmt.Errorf("a finding must be an object {\"msg\", \"evidence\", ...}, got %T", v)
	}
	msg, ok := m["msg"].(string)
	if !ok || msg == "" {
		return Finding{}, errors.New("a finding needs \"msg\", a non-empty string")
	}
	host, doc, err := of(r, m)
	if err != nil {
		return Finding{}, err
	}
	f := Finding{
		Rule:        r.ID,
		Severity:    r.Severity,
		Title:       r.Title,
		Host:        host,
		Fleet:       fleet,
		Message:     msg,
		Remediation: r.Remediation,
		// The rule's list, shared: nothing changes a finding's references,
		// and an append copies.
		References: slices.Clip(r.References),
		Expected:   m["expected"],
	}
	if s, ok := m["severity"]; ok {
		sev, _ := s.(string)
		if SeverityRank(sev) == 0 {
			return Finding{}, fmt.Errorf("finding severity %v is not one of critical, high, medium, low, info", s)
		}
		f.Severity = sev
	}
	if b, ok := m["basis"]; ok {
		if f.Basis, ok = b.(string); !ok {
			return Finding{}, fmt.Errorf("finding basis %v is not a string", b)
		}
	}
	if x, ok := m["fix"]; ok {
		if f.Fix, ok = x.(map[string]any); !ok {
			return Finding{}, fmt.Errorf("finding fix %v is not an object", x)
		}
	}
	if x, ok := m["evidence"]; ok {
		paths, ok := x.([]any)
		if !ok {
			return Finding{}, fmt.Errorf("finding evidence %v is not a list of fact paths", x)
		}
		f.Evidence = make([]Evidence, 0, len(paths))
		for _, p := range paths {
			fact, ok := p.(string)
			if !ok {
				return Finding{}, fmt.Errorf("evidence %v is not a fact path", p)
			}
			f.Evidence = append(f.Evidence, ev(doc, fact))
		}
	}
	return f, nil
}

// evidence resolves a fact path in a snapshot: its value, and its source
// from the snapshot's sources, falling back to the nearest ancestor path
// that has one, else to the sources of the facts below it (a rule citing
// "boot.running.params" as a whole: each param has its own source).
func evidence(doc map[string]any, fact string) Evidence {
	// A copy: findings outlive the snapshot they came from, whose values
	// documents share.
	v, _ := snapshot.Lookup(doc, fact)
	sources, _ := doc["sources"].(map[string]any)
	return Evidence{Fact: fact, Value: copyValue(citedValue(fact, v)), Source: evidenceSource(sources, fact)}
}

// evidenceFunc resolves a cited fact path in a document.
type evidenceFunc func(doc map[string]any, fact string) Evidence

// evidenceSource is evidence's source of fact from a snapshot's sources.
func evidenceSource(sources map[string]any, fact string) string {
	for p := fact; p != ""; {
		if s, ok := sourceText(sources[p]); ok {
			return unique.Make(s).Value()
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	var below []string
	for k, s := range sources {
		if s, ok := sourceText(s); ok && pathPrefix(fact, k) {
			below = append(below, s)
		}
	}
	slices.Sort(below)
	below = slices.Compact(below)
	switch {
	case len(below) > maxSourcesBelow:
		// Facts read from many files (every RDMA port): a list of them all
		// would bury the finding; the directory they share says where.
		if dir := commonDir(below); dir != "/" && dir != "" {
			return unique.Make(dir).Value()
		}
	case len(below) > 0:
		return unique.Make(strings.Join(below, ", ")).Value()
	}
	return ""
}

// commonDir is the deepest directory holding every file source given
// ("file" or "file:line"); "" when one is not an absolute path.
func commonDir(sources []string) string {
	dir := ""
	for _, s := range sources {
		f := fileOf(s)
		if !strings.HasPrefix(f, "/") {
			return ""
		}
		if dir == "" {
			dir = path.Dir(f)
			continue
		}
		for dir != "/" && !strings.HasPrefix(f, dir+"/") {
			dir = path.Dir(dir)
		}
	}
	return dir
}

// fileOf drops a source's ":line".
func fileOf(source string) string {
	if i := strings.LastIndexByte(source, ':'); i > 0 && strings.Trim(source[i+1:], "0123456789") == "" && i+1 < len(source) {
		return source[:i]
	}
	return source
}

// sourceText is a document's source as text: a string as read from a
// snapshot file, or a typed provenance a document was given (a config
// repo's fact taken from its fleet's baseline).
func sourceText(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case snapshot.Provenance:
		return s.String(), true
	}
	return "", false
}

// maxSourcesBelow bounds how many sources of the facts below a cited path
// become its source.
const maxSourcesBelow = 3

// ruleInput is the document as rules see it, as a Rego value: every
// section but sources. Provenance is not a fact to judge; the engine
// attaches it to evidence from the full document. Leaving it out halves the
// conversion of a GPU node's snapshot. Each section is converted straight
// into the input object, with no copy of the document.
func (e *Engine) ruleInput(doc map[string]any) (ast.Value, error) {
	return e.ruleInputSections(doc, nil, nil)
}

// sectionTermsOf are the terms of a snapshot's top-level member names,
// shared read-only by every evaluation, as OPA shares its interned terms.
func sectionTermsOf() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	for _, s := range snapshot.Sections() {
		m[s] = ast.StringTerm(s)
	}
	return m
}

// settle sorts the keys of every object in v before v is shared between
// evaluations running at once. OPA sorts an object's keys in place on
// first use (walk, iteration) and copies objects without waiting for that
// (with input.x as ...): a shared value sorted by one evaluation while
// another copies it is a data race, and the copy may miss keys.
func settle(v ast.Value) {
	switch x := v.(type) {
	case ast.Object:
		x.Foreach(func(_, t *ast.Term) { settle(t.Value) })
	case *ast.Array:
		x.Foreach(func(t *ast.Term) { settle(t.Value) })
	case ast.Set:
		x.Foreach(func(t *ast.Term) { settle(t.Value) })
	}
}

// bindings puts each rule's raw findings (the set, as a list) into vals.
// A rule with no findings has an empty, non-nil list.
func (ps *preparedScope) bindings(rs rego.ResultSet, vals [][]any) error {
	if len(rs) != 1 {
		return fmt.Errorf("policy query returned %d results, want 1", len(rs))
	}
	var errs []error
	for i, r := range ps.rules {
		values, ok := rs[0].Bindings[ps.names[i]].([]any)
		if !ok {
			errs = append(errs, fmt.Errorf("rule %s (%s): want a set of findings, got %T", r.ID, r.Location, rs[0].Bindings[ps.names[i]]))
			continue
		}
		if values == nil {
			values = []any{}
		}
		vals[i] = values
	}
	return errors.Join(errs...)
}

// convertedMembers gives the Rego value of a document member converted
// before, when the caller holds one (the runner's shared sections).
type convertedMembers interface {
	converted(member string) (ast.Value, bool, error)
}

// ruleInputSections is ruleInput of doc (only the members in sections,
// when not nil) with the members d holds converted (d may be nil).
func (e *Engine) ruleInputSections(doc map[string]any, sections map[string]bool, d convertedMembers) (ast.Value, error) {
	// One allocation for every value term, as InterfaceToValue does; the
	// section names' terms are made once, in New.
	n := len(doc)
	if sections != nil {
		n = min(n, len(sections))
	}
	values := make([]ast.Term, n)
	items := make([][2]*ast.Term, 0, n)
	for k, v := range doc {
		if k == "sources" || sections != nil && !sections[k] {
			continue
		}
		var x ast.Value
		var err error
		held := false
		if d != nil {
			x, held, err = d.converted(k)
		}
		if !held {
			x, err = ast.InterfaceToValue(v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		key, ok := e.sectionTerms[k]
		if !ok {
			key = ast.InternedTerm(k)
		}
		t := &values[len(items)]
		t.Value = x
		items = append(items, [2]*ast.Term{key, t})
	}
	return ast.NewObject(items...), nil
}
