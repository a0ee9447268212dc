package fleets

import (
	"context"
	"slices"

	"github.com/fleetaudit/fleetaudit/policies"
)

// NewEngine compiles the policies with the fleets of set (nil: none) and
// checks every profile against the rules (Set.Check): a parameter no rule
// reads, a selector that selects nothing or a severity override of no rule
// is an error naming the profile file and line.
func NewEngine(ctx context.Context, set *Set, policyDirs []string) (*policies.Engine, error) {
	engine, err := policies.New(ctx, policies.Options{PolicyDirs: policyDirs, Fleets: set.engineConfigs()})
	if err != nil {
		// The engine refuses a severity override of an unknown rule without
		// naming the profile's file; the rules alone compile, so say where.
		if set != nil {
			if bare, berr := policies.New(ctx, policies.Options{PolicyDirs: policyDirs}); berr == nil {
				if cerr := set.Check(KnownOf(bare)); cerr != nil {
					return nil, cerr
				}
			}
		}
		return nil, err
	}
	if set != nil {
		if err := set.Check(KnownOf(engine)); err != nil {
			return nil, err
		}
	}
	return engine, nil
}

// engineConfigs turns every profile but the common baseline into the
// engine's per-fleet configuration: the profile selects the rules, with its
// parameters and severity overrides.
func (s *Set) engineConfigs() map[string]policies.FleetConfig {
	out := map[string]policies.FleetConfig{}
	if s == nil {
		return out
	}
	for _, name := range s.Names() {
		if name == Common {
			continue
		}
		p, err := s.Resolve(name)
		if err != nil {
			continue // Load already resolved every profile.
		}
		out[name] = policies.FleetConfig{Select: p.Selects, Params: p.Params, Severity: p.Rules.Severity}
	}
	return out
}

// KnownOf is what the rules of e (an Engine or a Catalog) define, for
// Set.Check: their ids, the profiles they declare (what "tag:" selectors
// match) and the parameters they read.
func KnownOf(e interface {
	Rules() []policies.Rule
	Params() []string
}) Known {
	k := Known{RuleIDs: []string{}, Tags: []string{}, Params: e.Params()}
	for _, r := range e.Rules() {
		k.RuleIDs = append(k.RuleIDs, r.ID)
		for _, p := range r.Profiles {
			if !slices.Contains(k.Tags, p) {
				k.Tags = append(k.Tags, p)
			}
		}
	}
	return k
}
