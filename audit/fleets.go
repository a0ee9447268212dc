package audit

import (
	"cmp"
	"errors"
	"slices"
	"sync"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
)

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
	var inv *inventory.Host
	if h, ok := r.hosts[host]; ok {
		inv = &h
	}
	facts := fleets.FactsOf(host, inv, doc)
	name, err := r.set.FleetOf(facts)
	if err != nil && facts.Fleet != "" {
		// The inventory names a fleet no profile defines: say so, beside
		// the unknown-fleet finding.
		r.mu.Lock()
		r.errs = append(r.errs, HostError{Host: host, Error: err.Error()})
		r.mu.Unlock()
	}
	if errors.Is(err, policies.ErrUnknownFleet) {
		return ""
	}
	return name
}

func (r *fleetResolver) errors() []HostError {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.SortFunc(r.errs, func(a, b HostError) int { return cmp.Compare(a.Host, b.Host) })
	return slices.Clone(r.errs)
}

func fleetSummary(s *Summary, name string) FleetSummary {
	fs, ok := s.Fleets[name]
	if !ok {
		fs = FleetSummary{BySeverity: map[string]int{}}
	}
	return fs
}

// count adds one finding to the summary.
func count(s *Summary, f *policies.Finding) { countN(s, f, 1) }

// countN adds a finding of n hosts to the summary.
func countN(s *Summary, f *policies.Finding, n int) {
	s.Findings += n
	s.BySeverity[f.Severity] += n
	fs := fleetSummary(s, f.Fleet)
	fs.BySeverity[f.Severity] += n
	s.Fleets[f.Fleet] = fs
}

// MaxSeverityRank is the rank of the most severe unwaived finding (0 when
// none): what --fail-on compares.
func (r *Result) MaxSeverityRank() int {
	worst := 0
	if r.audit != nil && r.mark != nil {
		for f := range r.All() {
			if f.Waived == nil {
				worst = max(worst, policies.SeverityRank(f.Severity))
			}
		}
		return worst
	}
	if r.audit != nil {
		// Streamed and nothing waived: the summary counts them all.
		for sev, n := range r.Summary.BySeverity {
			if n > 0 {
				worst = max(worst, policies.SeverityRank(sev))
			}
		}
		return worst
	}
	for _, f := range r.Findings {
		if f.Waived != nil {
			continue
		}
		worst = max(worst, policies.SeverityRank(f.Severity))
	}
	return worst
}
