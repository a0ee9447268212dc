package audit

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
)

// FleetConfigs turns every profile but the common baseline into the engine's
// per-fleet configuration.
func FleetConfigs(set *fleets.Set) map[string]policies.FleetConfig {
	out := map[string]policies.FleetConfig{}
	if set == nil {
		return out
	}
	for _, name := range set.Names() {
		if name == fleets.Common {
			continue
		}
		p, err := set.Resolve(name)
		if err != nil {
			continue // Load already validated every profile.
		}
		out[name] = policies.FleetConfig{
			Params:   p.Params,
			Severity: p.Rules.Severity,
			Select:   func(r policies.Rule) bool { return p.Selects(r.ID, r.Profiles, nil) },
		}
	}
	return out
}

// NewEngine compiles the policies with the fleets of set and checks every
// profile against the rules (fleets.Set.Check): a parameter no rule reads,
// a selector that selects nothing or a severity override of no rule is an
// error naming the profile file and line.
func NewEngine(ctx context.Context, set *fleets.Set, policyDirs []string) (*policies.Engine, error) {
	engine, err := policies.New(ctx, policies.Options{PolicyDirs: policyDirs, Fleets: FleetConfigs(set)})
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

// KnownOf is what the engine's rules define, for fleets.Set.Check: their
// ids, the profiles they declare (what "tag:" selectors match) and the
// parameters they read.
func KnownOf(e *policies.Engine) fleets.Known {
	k := fleets.Known{RuleIDs: []string{}, Tags: []string{}, Params: e.Params()}
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

// fleetResolver gives each host its fleet: the inventory's, else the first
// profile that matches the host's groups, labels or name, else the first
// whose facts it shows (GPUs, RDMA devices), else "" (the engine's
// unknown-fleet rule reports it).
type fleetResolver struct {
	set   *fleets.Set
	hosts map[string]inventory.Host

	mu   sync.Mutex
	errs []HostError
}

func newFleetResolver(set *fleets.Set, inv *inventory.Inventory) *fleetResolver {
	r := &fleetResolver{set: set, hosts: map[string]inventory.Host{}}
	if inv != nil {
		for _, h := range inv.Hosts {
			r.hosts[h.Name] = h
		}
	}
	return r
}

func (r *fleetResolver) fleet(host string, doc map[string]any) string {
	if r.set == nil {
		return ""
	}
	facts := fleets.HostFacts{Name: host, Labels: map[string]string{}, GPUs: gpusOf(doc), RDMA: rdmaOf(doc)}
	for k, v := range policies.LabelsOf(doc) {
		facts.Labels[k] = v
	}
	if h, ok := r.hosts[host]; ok {
		facts.Fleet, facts.Groups = h.Fleet, h.Groups
		for k, v := range h.Labels {
			facts.Labels[k] = v
		}
	}
	name, err := r.set.FleetOf(facts)
	if err != nil && facts.Fleet != "" {
		// The inventory names a fleet no profile defines: say so, beside
		// the unknown-fleet finding.
		r.mu.Lock()
		r.errs = append(r.errs, HostError{Host: host, Error: err.Error()})
		r.mu.Unlock()
	}
	if errors.Is(err, fleets.ErrUnknownFleet) {
		return ""
	}
	return name
}

// gpusOf reads whether a snapshot shows NVIDIA GPUs: the driver present or
// GPUs listed. Unknown without an nvidia section (nil doc: not read).
func gpusOf(doc map[string]any) fleets.Presence {
	nv, ok := doc["nvidia"].(map[string]any)
	if !ok {
		return fleets.Unknown
	}
	gpus, _ := nv["gpus"].([]any)
	return fleets.PresenceOf(nv["present"] == true || len(gpus) > 0)
}

// rdmaOf reads whether a snapshot shows RDMA devices. Unknown without an
// rdma section.
func rdmaOf(doc map[string]any) fleets.Presence {
	rdma, ok := doc["rdma"].(map[string]any)
	if !ok {
		return fleets.Unknown
	}
	devices, _ := rdma["devices"].(map[string]any)
	return fleets.PresenceOf(len(devices) > 0)
}

func (r *fleetResolver) errors() []HostError {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.SortFunc(r.errs, func(a, b HostError) int { return cmp.Compare(a.Host, b.Host) })
	return slices.Clone(r.errs)
}

// sortFindings orders findings for reading: by fleet, most severe first,
// then host and rule.
func sortFindings(fs []policies.Finding) {
	slices.SortStableFunc(fs, func(a, b policies.Finding) int {
		return cmp.Or(
			cmp.Compare(a.Fleet, b.Fleet),
			-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
			cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Rule, b.Rule),
		)
	})
}

func summarize(hosts []policies.HostRun, findings []policies.Finding) Summary {
	s := Summary{Hosts: len(hosts), Findings: len(findings), BySeverity: map[string]int{}, Fleets: map[string]FleetSummary{}}
	fleet := func(name string) FleetSummary {
		fs, ok := s.Fleets[name]
		if !ok {
			fs = FleetSummary{BySeverity: map[string]int{}}
		}
		return fs
	}
	for _, h := range hosts {
		fs := fleet(h.Fleet)
		fs.Hosts++
		s.Fleets[h.Fleet] = fs
	}
	for _, f := range findings {
		s.BySeverity[f.Severity]++
		fs := fleet(f.Fleet)
		fs.BySeverity[f.Severity]++
		s.Fleets[f.Fleet] = fs
	}
	return s
}

// MaxSeverityRank is the rank of the most severe finding (0 when none).
func (r *Result) MaxSeverityRank() int {
	worst := 0
	for _, f := range r.Findings {
		worst = max(worst, policies.SeverityRank(f.Severity))
	}
	return worst
}
