package policies

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Scope says what a rule sees as input.
type Scope string

const (
	// ScopeHost rules live under data.fleetaudit.rules and see one snapshot.
	ScopeHost Scope = "host"
	// ScopeFleet rules live under data.fleetaudit.fleet_rules and see the
	// projection of all hosts of one fleet.
	ScopeFleet Scope = "fleet"
)

// ProfileAll in a rule's profiles makes it run in every fleet, including
// hosts that match no fleet.
const ProfileAll = "all"

// Rule is a rule's metadata, from the METADATA block above it.
type Rule struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Severity    string   `json:"severity"`
	Profiles    []string `json:"profiles"`
	Remediation string   `json:"remediation"`
	References  []string `json:"references"`
	// Facts are the fact paths the rule reads; "*" matches one path element
	// and a path covers everything below it.
	Facts []string `json:"facts"`
	// Image (custom.image) says the rule judges configuration alone, so it
	// runs on an offline image although it also reads running state.
	Image bool  `json:"image,omitempty"`
	Scope Scope `json:"scope"`
	// Ref is the rule's document, e.g. "data.fleetaudit.rules.boot.hugetlb_cma_on_gpu".
	Ref string `json:"ref"`
	// Location is the file:line of the METADATA block.
	Location string `json:"location"`
	// Builtin is true for rules of the embedded library.
	Builtin bool `json:"builtin"`

	ref ast.Ref
	// facts are Facts split at dots; sections the snapshot sections they
	// read (first elements, meta keys and "*" left out).
	facts    [][]string
	sections []string
	// readsRunning: some fact lies on or below snapshot.RunningState.
	readsRunning bool
	// reads is what a host rule reads of its input (staticReads).
	reads ruleReads
}

var idPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// scopeOf returns the scope of rules in package path, or "" for packages
// that hold no findings (libraries, tests).
func scopeOf(pkg ast.Ref) Scope {
	if len(pkg) < 3 || !pkg[0].Equal(ast.DefaultRootDocument) ||
		!pkg[1].Equal(ast.StringTerm("fleetaudit")) {
		return ""
	}
	switch {
	case pkg[2].Equal(ast.StringTerm("rules")):
		return ScopeHost
	case pkg[2].Equal(ast.StringTerm("fleet_rules")):
		return ScopeFleet
	}
	return ""
}

// collectRules finds every finding rule of modules and checks
// its metadata. A finding rule is a multi-value rule with a plain name in a
// package under data.fleetaudit.rules or data.fleetaudit.fleet_rules; other
// rules there (complete rules, functions) are helpers. Every violation is
// reported, each naming file:line.
func collectRules(modules map[string]*ast.Module, as *ast.AnnotationSet, builtin func(file string) bool) ([]*Rule, error) {
	type group struct {
		ref   ast.Ref
		scope Scope
		defs  []*ast.Rule
	}
	groups := map[string]*group{}
	var order []string
	var errs []error
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		mod := modules[name]
		scope := scopeOf(mod.Package.Path)
		if scope == "" {
			continue
		}
		for _, r := range mod.Rules {
			head := r.Head.Ref()
			if r.Head.RuleKind() != ast.MultiValue || len(head) != 1 || len(r.Head.Args) > 0 {
				for _, a := range as.GetRuleScope(r) {
					if _, ok := a.Custom["id"]; ok {
						errs = append(errs, fmt.Errorf("%s: rule %s has custom.id but is not a finding rule: write it as %q",
							a.Location, head, head.String()+" contains f if { ... }"))
					}
				}
				continue
			}
			ref := mod.Package.Path.Extend(head)
			key := ref.String()
			g, ok := groups[key]
			if !ok {
				g = &group{ref: ref, scope: scope}
				groups[key] = g
				order = append(order, key)
			}
			g.defs = append(g.defs, r)
		}
	}

	rules := make([]*Rule, 0, len(order))
	for _, key := range order {
		g := groups[key]
		var annots []*ast.Annotations
		for _, r := range g.defs {
			annots = append(annots, as.GetRuleScope(r)...)
		}
		if a := as.GetDocumentScope(g.ref); a != nil {
			annots = append(annots, a)
		}
		loc := g.defs[0].Location
		switch len(annots) {
		case 0:
			errs = append(errs, fmt.Errorf("%s: rule %s has no METADATA block (title, description, related_resources, custom: id, severity, profiles, remediation, facts)", loc, key))
			continue
		case 1:
		default:
			where := make([]string, len(annots))
			for i, a := range annots {
				where[i] = a.Location.String()
			}
			errs = append(errs, fmt.Errorf("%s: rule %s has METADATA in several places (%s); keep one", loc, key, strings.Join(where, ", ")))
			continue
		}
		rule, err := ruleFromAnnotations(annots[0], g.ref, g.scope)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rule.Builtin = builtin(annots[0].Location.File)
		rules = append(rules, rule)
	}

	seen := map[string]*Rule{}
	for _, r := range rules {
		if prev, ok := seen[r.ID]; ok {
			errs = append(errs, fmt.Errorf("%s: rule id %s is already used by %s (%s)", r.Location, r.ID, prev.Ref, prev.Location))
			continue
		}
		seen[r.ID] = r
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	return rules, nil
}

func ruleFromAnnotations(a *ast.Annotations, ref ast.Ref, scope Scope) (*Rule, error) {
	var name string
	switch v := ref[len(ref)-1].Value.(type) {
	case ast.String:
		name = string(v)
	case ast.Var:
		name = string(v)
	}
	r := &Rule{
		Title:       strings.TrimSpace(a.Title),
		Description: strings.TrimSpace(a.Description),
		Scope:       scope,
		Ref:         ref.String(),
		Location:    a.Location.String(),
		ref:         ref,
	}
	var problems []string
	missing := func(what string) { problems = append(problems, what+" is missing") }

	if r.Title == "" {
		missing("title")
	}
	if r.Description == "" {
		missing("description")
	}
	for _, rr := range a.RelatedResources {
		r.References = append(r.References, rr.Ref.String())
	}
	if len(r.References) == 0 {
		missing("related_resources")
	}
	var ok bool
	if r.ID, ok = customString(a.Custom, "id"); !ok {
		missing("custom.id")
	} else if want := strings.ReplaceAll(name, "_", "-"); r.ID != want || !idPattern.MatchString(r.ID) {
		problems = append(problems, fmt.Sprintf("custom.id %q must be the rule name in kebab-case: %q", r.ID, want))
	}
	if r.Severity, ok = customString(a.Custom, "severity"); !ok {
		missing("custom.severity")
	} else if SeverityRank(r.Severity) == 0 {
		problems = append(problems, fmt.Sprintf("custom.severity %q is not one of critical, high, medium, low, info", r.Severity))
	}
	if r.Profiles, ok = customStrings(a.Custom, "profiles"); !ok {
		missing("custom.profiles (a list, e.g. [gpu-training] or [all])")
	}
	if r.Remediation, ok = customString(a.Custom, "remediation"); !ok {
		missing("custom.remediation")
	}
	if r.Facts, ok = customStrings(a.Custom, "facts"); !ok {
		missing("custom.facts (the fact paths the rule reads)")
	}
	for _, f := range r.Facts {
		// A path no snapshot holds is a typo: the rule would be skipped or
		// judged on nothing without anyone noticing.
		if err := snapshot.CheckFactPath(f); err != nil {
			problems = append(problems, "custom.facts: "+err.Error())
		}
	}
	r.setFacts()
	if v, ok := a.Custom["image"]; ok {
		if r.Image, ok = v.(bool); !ok {
			problems = append(problems, fmt.Sprintf("custom.image %v is not a boolean", v))
		}
	}
	if s, ok := customString(a.Custom, "scope"); ok && Scope(s) != scope {
		problems = append(problems, fmt.Sprintf("custom.scope %q contradicts the package, which makes it a %s rule", s, scope))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: METADATA of %s: %s", a.Location, r.Ref, strings.Join(problems, "; "))
	}
	r.Remediation = strings.TrimSpace(r.Remediation)
	return r, nil
}

func customString(custom map[string]any, key string) (string, bool) {
	s, ok := custom[key].(string)
	return s, ok && strings.TrimSpace(s) != ""
}

func customStrings(custom map[string]any, key string) ([]string, bool) {
	list, ok := custom[key].([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// checkFleetInput refuses a fleet rule written for the input fleet rules
// saw before groups ({"hosts": [projection]}): it would find nothing.
func checkFleetInput(c *ast.Compiler, r *Rule) error {
	for _, p := range staticReads(c, r.ref).paths {
		if p[0].Equal(hostsTerm) {
			return fmt.Errorf("%s: fleet rule %s reads input.hosts, which fleet rules no longer see: they see each distinct configuration once, as input.groups (each with its \"count\" of hosts), and name a \"group\" in each finding; see \"Fleet-wide rules\" in docs/writing-policies.md", r.Location, r.ID)
		}
	}
	return nil
}

var hostsTerm = ast.StringTerm("hosts")

// Catalog is the metadata of the rules and the parameters they read, read
// from the parsed modules alone: nothing is compiled, so a rule that does
// not compile is listed, and its error is the engine's (New) to report.
type Catalog struct {
	rules  []Rule
	params []string
}

// ReadCatalog parses the built-in library and policyDirs and reads every
// rule's METADATA, checked as New checks it.
func ReadCatalog(policyDirs []string) (*Catalog, error) {
	mods, _, err := parsePolicies(policyDirs, capabilities())
	if err != nil {
		return nil, err
	}
	list := make([]*ast.Module, 0, len(mods))
	for _, name := range slices.Sorted(maps.Keys(mods)) {
		list = append(list, mods[name])
	}
	as, errs := ast.BuildAnnotationSet(list)
	if len(errs) > 0 {
		return nil, fmt.Errorf("policy metadata: %w", errs)
	}
	rules, err := collectRules(mods, as, isBuiltinFile)
	if err != nil {
		return nil, fmt.Errorf("policy metadata: %w", err)
	}
	c := &Catalog{rules: make([]Rule, len(rules)), params: paramsRead(mods)}
	for i, r := range rules {
		c.rules[i] = *r
	}
	return c, nil
}

// Rules returns the metadata of every rule, sorted by id, as
// Engine.Rules does.
func (c *Catalog) Rules() []Rule { return slices.Clone(c.rules) }

// Params returns what Engine.Params would.
func (c *Catalog) Params() []string { return slices.Clone(c.params) }
