package policies

import (
	"context"
	"slices"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// What the runner (policies/fleetrun) uses of the engine core, and nothing
// else: each is a name for core code the oracle uses too.

// Queries are one fleet's prepared queries, host and fleet-wide.
type Queries = fleetQueries

// Queries returns the prepared queries of fleet, if it is configured.
func (e *Engine) Queries(fleet string) (*Queries, bool) {
	fq, ok := e.fleets[fleet]
	return fq, ok
}

// RuleByID returns the rule with the given id, or nil.
func (e *Engine) RuleByID(id string) *Rule { return e.byID[id] }

// FactsUnder reports whether a fleet rule declares a fact under the
// top-level member name (or one for every member).
func (e *Engine) FactsUnder(name string) bool { return e.factTop[name] || e.factTop["*"] }

// SectionTerm returns the Rego term of a snapshot section's name, made once.
func (e *Engine) SectionTerm(name string) (*ast.Term, bool) {
	t, ok := e.sectionTerms[name]
	return t, ok
}

// ConvertedMembers are members of a document already converted to Rego
// values: ConvertedMember returns one, whether it is held, and why it could
// not be converted.
type ConvertedMembers interface {
	ConvertedMember(name string) (ast.Value, bool, error)
}

type convertedAdapter struct{ d ConvertedMembers }

func (c convertedAdapter) converted(name string) (ast.Value, bool, error) {
	return c.d.ConvertedMember(name)
}

// RuleInputSections is the host rules' input of doc: only the members in
// sections when not nil, those d holds (d may be nil) as d converted them.
func (e *Engine) RuleInputSections(doc map[string]any, sections map[string]bool, d ConvertedMembers) (ast.Value, error) {
	if d == nil {
		return e.ruleInputSections(doc, sections, nil)
	}
	return e.ruleInputSections(doc, sections, convertedAdapter{d})
}

// GroupInput is fleet-wide rules' input made of groups: each group's
// projection with its index and its number of hosts.
type GroupInput = groupInput

// NewGroupInput is the input of fleet's groups, in order, ready for rules
// evaluated at once.
func (e *Engine) NewGroupInput(fleet string, groups []*FleetGroup) (*GroupInput, error) {
	in, err := e.newGroupInput(fleet, groups)
	if err != nil {
		return nil, err
	}
	settle(in.value)
	return in, nil
}

// EvalGroupRule evaluates fleet-wide rule r alone on in within budget: its
// findings in the rule's order, Host the index of the group (in in) each
// names, admitted by that group's coverage; timedOut when it ran out of
// the budget. Safe for rules evaluated at once.
func (fq *Queries) EvalGroupRule(ctx context.Context, r *Rule, in *GroupInput, budget time.Duration) (findings []Finding, timedOut bool, err error) {
	one, rs, timedOut, err := fq.evalAlone(ctx, r, in.value, budget)
	if timedOut || err != nil {
		return nil, timedOut, err
	}
	findings, err = one.findings(rs, in.of, in.fleet, fq.severity, in.admit)
	return findings, false, err
}

// BuiltinOnly reports whether rule r and every rule and function it
// reaches are the built-in library's (a user module may add to a built-in
// package): then r reads only the facts it declares.
func (fq *Queries) BuiltinOnly(r *Rule) bool {
	if !r.Builtin {
		return false
	}
	c := fq.compiler
	seen := map[*ast.Rule]bool{}
	work := slices.Clone(c.GetRules(r.ref))
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		if x.Location == nil || !isBuiltinFile(x.Location.File) {
			return false
		}
		ast.WalkRefs(x, func(ref ast.Ref) bool {
			if ref[0].Equal(ast.DefaultRootDocument) {
				work = append(work, c.GetRules(ref.GroundPrefix())...)
			}
			return false
		})
	}
	return true
}

// FleetRules are the fleet's fleet-wide rules, in query order; nil when none.
func (fq *Queries) FleetRules() []*Rule {
	if fq.fleet == nil {
		return nil
	}
	return fq.fleet.rules
}

// HostRules are the fleet's host rules, in query order; nil when none.
func (fq *Queries) HostRules() []*Rule {
	if fq.host == nil {
		return nil
	}
	return fq.host.rules
}

// HasFleetRules reports whether the fleet runs any fleet-wide rule.
func (fq *Queries) HasFleetRules() bool { return fq.fleet != nil }

// Reads is what host rule i (of HostRules) reads in this fleet: nothing
// once Missed found it constant there.
func (fq *Queries) Reads(i int) RuleReads {
	if fq.constant[i].Load() {
		return RuleReads{}
	}
	return fq.reads[i]
}

// constantAfter is how many inputs new to the run a host rule is evaluated
// on before Missed checks whether it is constant in the fleet: no rule of a
// fleet of repeated configurations (bench/gen's default, 100k hosts) meets
// that many, and a check can take 20 ms (hugetlb-cma-on-gpu).
const constantAfter = 64

// Missed counts one evaluation of host rule i on an input new to the run.
// A rule that keeps meeting new inputs is checked once, by partial
// evaluation, for a result the same whatever the input in this fleet (as
// boot-param-forbidden where the fleet forbids nothing, while it reads every
// host's own boot params): then it reads nothing, and every host shares its
// result. Checking every rule when the engine is made would cost a fleet
// whose hosts repeat more than it saves.
func (fq *Queries) Missed(ctx context.Context, i int) {
	if fq.missed[i].Add(1) != constantAfter {
		return
	}
	fq.evalMu.Lock()
	defer fq.evalMu.Unlock()
	if constantIn(ctx, fq.compiler, fq.caps, fq.store, fq.host.rules[i]) {
		fq.constant[i].Store(true)
	}
}

// Severity holds the fleet profile's severity overrides by rule id.
func (fq *Queries) Severity() map[string]string { return fq.severity }

// Shareable reports whether no host rule reads the host's name, so hosts
// that differ only in name share one evaluation.
func (fq *Queries) Shareable() bool { return fq.shareable }

// EvalRules evaluates the host rules at indexes idx (of HostRules,
// ascending) in one query within budget and puts rule idx[j]'s raw findings
// into vals[idx[j]]. On an error (the budget ran out, a rule failed) it
// puts nothing: evaluate each rule alone (EvalAlone) to tell which.
func (fq *Queries) EvalRules(ctx context.Context, idx []int, input ast.Value, budget time.Duration, vals [][]any) error {
	if len(idx) == 0 {
		return nil
	}
	ps, err := fq.subset(ctx, idx)
	if err != nil {
		return err
	}
	rs, err := fq.evalBudget(ctx, ps, input, budget)
	if err != nil {
		return err
	}
	out := make([][]any, len(idx))
	if err := ps.bindings(rs, out); err != nil {
		return err
	}
	for j, i := range idx {
		vals[i] = out[j]
	}
	return nil
}

// EvalAlone evaluates rule r alone within budget and returns its raw
// findings, or timedOut when it ran out of the budget.
func (fq *Queries) EvalAlone(ctx context.Context, r *Rule, input ast.Value, budget time.Duration) (vals []any, timedOut bool, err error) {
	one, rs, timedOut, err := fq.evalAlone(ctx, r, input, budget)
	if timedOut || err != nil {
		return nil, timedOut, err
	}
	out := [][]any{nil}
	if err := one.bindings(rs, out); err != nil {
		return nil, false, err
	}
	return out[0], false, nil
}

// InputPath is a path of the input a rule reads, as Rego terms.
type InputPath = inputPath

// RuleReads is what one rule reads: paths, or the whole input.
type RuleReads = ruleReads

// Whole reports whether the rule reads the input whole.
func (r RuleReads) Whole() bool { return r.whole }

// Paths are the paths the rule reads (none when Whole).
func (r RuleReads) Paths() []InputPath { return r.paths }

// Names are Paths as text.
func (r RuleReads) Names() []string { return r.names }

// Less are the keys of the object at Paths()[i] the rule never sees
// (nil: none): its result does not depend on them.
func (r RuleReads) Less(i int) []string { return r.lessAt(i) }

// Coverage says which sections of a host were collected.
type Coverage = coverage

// CoverageOf is the coverage of a host's document.
func CoverageOf(doc map[string]any) *Coverage { return coverageOf(doc) }

// Skipped are the ids of the rules that do not run on the host.
func (c *Coverage) Skipped(rules []*Rule) []string { return c.skipped(rules) }

// Admits reports whether finding f of rule r rests on collected facts.
func (c *Coverage) Admits(r *Rule, f *Finding) bool { return c.admits(r, f) }

// Unread says why nothing of the host was read; "" when it was.
func (c *Coverage) Unread() string { return c.unread }

// Image reports whether the host is an offline image.
func (c *Coverage) Image() bool { return c.image }

// PodsUnread reports whether a read host had neither pods nor a node.
func (c *Coverage) PodsUnread() bool { return c.podsUnread() }

// Projection is a host's fleet projection, as fleet-wide rules see it.
type Projection = projection

// NewProjection is the projection doc (see Project).
func NewProjection(doc map[string]any) *Projection { return &projection{doc: doc} }

// SetTerms gives the projection its members as Rego terms, made elsewhere
// (from shared parts); unless its terms were already made.
func (p *Projection) SetTerms(items [][2]*ast.Term) { p.once.Do(func() { p.items = items }) }

// FleetGroup is the hosts of one fleet that share a projection.
type FleetGroup = fleetGroup

// NewFleetGroup is an empty group of projection p.
func NewFleetGroup(p *Projection) *FleetGroup { return &fleetGroup{proj: p} }

// AddHosts counts n more hosts in the group.
func (g *FleetGroup) AddHosts(n int) { g.count += n }

// Count is the group's number of hosts.
func (g *FleetGroup) Count() int { return g.count }

// Projection is the group's projection.
func (g *FleetGroup) Projection() *Projection { return g.proj }

// AppendRuleFindings appends the findings of rule r's raw values on host's
// doc: severity holds the fleet's overrides, admit (nil: all) filters,
// ev resolves each cited fact.
func AppendRuleFindings(out []Finding, r *Rule, values []any, host string, doc map[string]any, fleet string,
	severity map[string]string, admit func(*Rule, *Finding) bool, ev func(doc map[string]any, fact string) Evidence) ([]Finding, error) {
	of := func(*Rule, map[string]any) (string, map[string]any, error) { return host, doc, nil }
	return appendRuleFindings(out, r, values, of, fleet, severity, admit, ev)
}

// Settle sorts the keys of every object in v, so that v can be shared
// between goroutines.
func Settle(v ast.Value) { settle(v) }

// CopyValue is a deep copy of v's objects and lists.
func CopyValue(v any) any { return copyValue(v) }

// CitedValue is the value a finding cites for fact, given its value v.
func CitedValue(fact string, v any) any { return citedValue(fact, v) }

// EvidenceSource is the source of fact in a snapshot's sources.
func EvidenceSource(sources map[string]any, fact string) string { return evidenceSource(sources, fact) }

// ForHost is a group's finding f as host's.
func ForHost(f *Finding, host string) Finding { return forHost(f, host) }
