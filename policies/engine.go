package policies

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// ErrUnknownFleet is wrapped by every error about a fleet nobody defined:
// one the engine was not configured with, and (package fleets) a host's
// fleet that no profile defines or matches. Here so both can wrap it:
// fleets imports policies, never the reverse.
var ErrUnknownFleet = errors.New("unknown fleet")

// Options configure an Engine.
type Options struct {
	// PolicyDirs are user policy directories or files (--policies): Rego v1
	// modules (not _test.rego) and JSON/YAML data files, loaded into the same
	// compiler and store as the built-in library.
	PolicyDirs []string
	// Fleets configures each fleet by name. The fleet "" (hosts that match
	// no fleet) always exists and runs only rules for profile "all".
	Fleets map[string]FleetConfig
}

// FleetConfig is what the engine needs from a fleet profile (see
// fleets.NewEngine, which builds it).
type FleetConfig struct {
	// Select decides which rules the fleet runs: the profile's rules
	// include/exclude lists over the rules' metadata (fleets.Profile.Selects).
	// Nil runs the rules meant for every fleet (custom.profiles "all"), as
	// the fleet "" does.
	Select func(Rule) bool
	// Params are data.fleetaudit.params for the fleet's rules.
	Params map[string]any
	// Severity overrides the severity of findings by rule id; it wins over
	// both the METADATA severity and a rule's own per-finding severity.
	Severity map[string]string
}

// Engine evaluates snapshots against the compiled rules. It is immutable
// after New and safe for concurrent use.
type Engine struct {
	rules  []*Rule
	byID   map[string]*Rule
	fleets map[string]*fleetQueries
	// facts are the fact paths fleet rules declare, split at dots, with
	// paths another one covers removed: what Project keeps.
	facts [][]string
	// factPaths are facts joined back with dots ("" for a pattern with "*").
	factPaths []string
	// factTop are the first elements of facts (see projectMember).
	factTop map[string]bool
	// params are the parameter names the rules read (see Params).
	params []string
	// sectionTerms are the Rego terms of snapshot section names (ruleInput).
	sectionTerms map[string]*ast.Term
	// evalMu is held for writing by partial evaluation once queries run
	// (Queries.Missed), and for reading by every query and preparation:
	// partial evaluation writes into the compiled rules it saves
	// expressions of (topdown's updateFromQuery).
	evalMu sync.RWMutex
}

type fleetQueries struct {
	host, fleet *preparedScope
	severity    map[string]string
	// reads are what each host rule (host.rules[i]) reads in this fleet;
	// shareable is true when none reads the host's name, so hosts that
	// differ only in name share one evaluation.
	reads     readsOf
	shareable bool
	// missed counts each host rule's evaluations on inputs new to the run
	// (Missed); constant marks one found constant in the fleet since.
	missed   []atomic.Int32
	constant []atomic.Bool

	// What single needs to prepare one rule's query, when a host's
	// evaluation ran out of its budget and each rule runs alone.
	compiler *ast.Compiler
	caps     *ast.Capabilities
	store    storage.Store
	mu       sync.Mutex
	evalMu   *sync.RWMutex
	singles  map[string]*preparedScope
	// subsets are the prepared queries of sets of host rules, by set
	// (subset); at most maxSubsets.
	subsets map[string]*preparedScope
}

// maxSubsets bounds the sets of host rules a fleet prepares a query for: a
// fleet's hosts differ in a few ways, each a set of rules whose input is
// new; a set beyond the bound is refused (its rules run alone).
const maxSubsets = 64

var errTooManySubsets = errors.New("too many sets of rules to prepare a query for each")

// subset returns the prepared query of the host rules at indexes idx
// (ascending): the fleet's own for all of them, else one prepared on first
// use.
func (fq *fleetQueries) subset(ctx context.Context, idx []int) (*preparedScope, error) {
	if len(idx) == len(fq.host.rules) {
		return fq.host, nil
	}
	key := make([]byte, 0, 2*len(idx))
	for _, i := range idx {
		key = binary.AppendUvarint(key, uint64(i))
	}
	fq.mu.Lock()
	defer fq.mu.Unlock()
	if ps, ok := fq.subsets[string(key)]; ok {
		return ps, nil
	}
	if len(fq.subsets) >= maxSubsets {
		return nil, errTooManySubsets
	}
	rules := make([]*Rule, len(idx))
	for j, i := range idx {
		rules[j] = fq.host.rules[i]
	}
	fq.evalMu.RLock()
	ps, err := prepare(ctx, fq.compiler, fq.caps, fq.store, rules)
	fq.evalMu.RUnlock()
	if err != nil {
		return nil, err
	}
	if fq.subsets == nil {
		fq.subsets = map[string]*preparedScope{}
	}
	fq.subsets[string(key)] = ps
	return ps, nil
}

// single returns the prepared query of one rule alone, prepared on first use.
func (fq *fleetQueries) single(ctx context.Context, r *Rule) (*preparedScope, error) {
	fq.mu.Lock()
	defer fq.mu.Unlock()
	if ps, ok := fq.singles[r.ID]; ok {
		return ps, nil
	}
	fq.evalMu.RLock()
	ps, err := prepare(ctx, fq.compiler, fq.caps, fq.store, []*Rule{r})
	fq.evalMu.RUnlock()
	if err != nil {
		return nil, err
	}
	if fq.singles == nil {
		fq.singles = map[string]*preparedScope{}
	}
	fq.singles[r.ID] = ps
	return ps, nil
}

// preparedScope is one prepared query binding each enabled rule of a scope
// to a variable: names[i] holds the findings of rules[i].
type preparedScope struct {
	query rego.PreparedEvalQuery
	rules []*Rule
	names []string
}

// New loads and compiles the built-in library and opts.PolicyDirs, checks
// every rule's metadata, and prepares the queries of each fleet. Errors name
// the file and line at fault.
func New(ctx context.Context, opts Options) (*Engine, error) {
	caps := capabilities()
	mods, docs, err := parsePolicies(opts.PolicyDirs, caps)
	if err != nil {
		return nil, err
	}
	compiler, err := compile(mods, caps)
	if err != nil {
		return nil, err
	}
	rules, err := collectRules(compiler.Modules, compiler.GetAnnotationSet(), isBuiltinFile)
	if err != nil {
		return nil, fmt.Errorf("policy metadata: %w", err)
	}

	e := &Engine{rules: rules, byID: map[string]*Rule{}, fleets: map[string]*fleetQueries{}, params: paramsRead(compiler.Modules), sectionTerms: sectionTermsOf()}
	var facts []string
	var errs []error
	for _, r := range rules {
		e.byID[r.ID] = r
		if r.Scope == ScopeHost {
			r.reads = staticReads(compiler, r.ref)
		}
		if r.Scope == ScopeFleet {
			facts = append(facts, r.Facts...)
			errs = append(errs, checkFleetInput(compiler, r))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("policy rules: %w", err)
	}
	e.setFleetFacts(facts)

	fleets := map[string]FleetConfig{"": {}}
	for name, fc := range opts.Fleets {
		if name == "" {
			return nil, errors.New("fleet config: a fleet needs a name; \"\" stands for hosts that match no fleet")
		}
		fleets[name] = fc
	}
	for _, name := range slices.Sorted(maps.Keys(fleets)) {
		fq, err := e.prepareFleet(ctx, compiler, caps, docs, name, fleets[name])
		if err != nil {
			return nil, fmt.Errorf("fleet %q: %w", name, err)
		}
		e.fleets[name] = fq
	}
	return e, nil
}

// Rules returns the metadata of every rule, sorted by id.
func (e *Engine) Rules() []Rule {
	out := make([]Rule, len(e.rules))
	for i, r := range e.rules {
		out[i] = *r
	}
	return out
}

// Rule returns the metadata of the rule with the given id.
func (e *Engine) Rule(id string) (Rule, bool) {
	r, ok := e.byID[id]
	if !ok {
		return Rule{}, false
	}
	return *r, true
}

// Fleets returns the configured fleet names, sorted; "" is the fleet of
// hosts that match none.
func (e *Engine) Fleets() []string {
	return slices.Sorted(maps.Keys(e.fleets))
}

func (e *Engine) prepareFleet(ctx context.Context, c *ast.Compiler, caps *ast.Capabilities, docs map[string]any, name string, fc FleetConfig) (*fleetQueries, error) {
	sel := fc.Select
	if sel == nil {
		sel = forEveryFleet
	}
	var enabled []*Rule
	for _, r := range e.rules {
		// A blind spot is never a silence: no profile can turn off the
		// report of a host or source that could not be read.
		if sel(*r) || r.ID == CollectionErrorRule {
			enabled = append(enabled, r)
		}
	}
	for id, sev := range fc.Severity {
		if _, ok := e.byID[id]; !ok {
			return nil, fmt.Errorf("severity: no rule has id %q", id)
		}
		if SeverityRank(sev) == 0 {
			return nil, fmt.Errorf("severity of %s: %q is not one of critical, high, medium, low, info", id, sev)
		}
	}
	store, err := fleetStore(docs, name, fc.Params)
	if err != nil {
		return nil, err
	}
	fq := &fleetQueries{severity: maps.Clone(fc.Severity), compiler: c, caps: caps, store: store, evalMu: &e.evalMu}
	for _, scope := range []Scope{ScopeHost, ScopeFleet} {
		var rules []*Rule
		for _, r := range enabled {
			if r.Scope == scope {
				rules = append(rules, r)
			}
		}
		ps, err := prepare(ctx, c, caps, store, rules)
		if err != nil {
			return nil, fmt.Errorf("prepare %s rules: %w", scope, err)
		}
		if scope == ScopeHost {
			fq.host = ps
			fq.shareable = true
			fq.missed = make([]atomic.Int32, len(rules))
			fq.constant = make([]atomic.Bool, len(rules))
			for _, r := range rules {
				reads := r.reads
				if reads.readsHost() && constantIn(ctx, c, caps, store, r) {
					// Its result is the same whatever the host.
					reads = ruleReads{}
				}
				fq.reads = append(fq.reads, reads.named())
				if reads.readsHost() {
					fq.shareable = false
				}
			}
		} else {
			fq.fleet = ps
		}
	}
	return fq, nil
}

// CollectionErrorRule reports what could not be collected; it runs in every
// fleet whatever the profile selects.
const CollectionErrorRule = "collection-error"

// forEveryFleet selects the rules meant for every fleet.
func forEveryFleet(r Rule) bool { return slices.Contains(r.Profiles, ProfileAll) }

// prepare builds the query "r0 = data...rule0; r1 = data...rule1; ..." so one
// evaluation per host yields every enabled rule's findings. A rule with no
// findings is an empty set, so every binding is always defined.
func prepare(ctx context.Context, c *ast.Compiler, caps *ast.Capabilities, store storage.Store, rules []*Rule) (*preparedScope, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	ps := &preparedScope{rules: rules, names: make([]string, len(rules))}
	body := make(ast.Body, len(rules))
	for i, r := range rules {
		ps.names[i] = "r" + strconv.Itoa(i)
		body[i] = ast.Equality.Expr(ast.VarTerm(ps.names[i]), ast.NewTerm(r.ref.Copy()))
	}
	q, err := rego.New(
		rego.ParsedQuery(body),
		rego.Compiler(c),
		rego.Store(store),
		rego.Capabilities(caps),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, err
	}
	ps.query = q
	return ps, nil
}

// fleetStore holds the user data files plus the fleet's name and params at
// data.fleetaudit.fleet and data.fleetaudit.params. Values are kept as AST,
// so rules read params without a conversion per evaluation.
func fleetStore(docs map[string]any, fleet string, params map[string]any) (storage.Store, error) {
	if _, ok := docs["fleetaudit"]; ok {
		// The engine's params and the rule packages live there; a base
		// document would collide with them.
		return nil, errors.New("policy data: data.fleetaudit is reserved for the engine and its rules; put data files under another path (fleet parameters belong in the fleet profile's params)")
	}
	p, err := jsonObject(params)
	if err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	data := make(map[string]any, len(docs)+1)
	maps.Copy(data, docs)
	data["fleetaudit"] = map[string]any{"params": p, "fleet": fleet}
	return inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true)), nil
}

// jsonObject returns m in the JSON types Rego reads (numbers as
// json.Number, lists as []any), or an error if m has no JSON form.
func jsonObject(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := snapshot.DecodeJSON(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// setFleetFacts records the facts fleet rules read, which Project keeps.
func (e *Engine) setFleetFacts(paths []string) {
	e.facts = coveringFacts(paths)
	e.factPaths = make([]string, len(e.facts))
	e.factTop = map[string]bool{}
	for i, f := range e.facts {
		e.factTop[f[0]] = true
		if !slices.Contains(f, "*") {
			e.factPaths[i] = strings.Join(f, ".")
		}
	}
}

// coveringFacts splits fact paths and drops those another path covers.
func coveringFacts(paths []string) [][]string {
	var split [][]string
	for _, p := range paths {
		split = append(split, splitPath(p))
	}
	sort.Slice(split, func(i, j int) bool { return len(split[i]) < len(split[j]) })
	var out [][]string
	for _, p := range split {
		if !slices.ContainsFunc(out, func(q []string) bool { return covers(q, p) }) {
			out = append(out, p)
		}
	}
	return out
}
