package reports

import (
	"cmp"
	"maps"
	"slices"

	"github.com/fleetaudit/fleetaudit/policies"
)

// ruleGroup is one rule's findings in one fleet, counted as they come: the
// grouped views need the hosts, the distinct values of the cited facts and
// where they were set, not the findings, so a rule that fires on 100,000
// hosts costs a name per host.
type ruleGroup struct {
	Rule, Title, Severity string
	// Hosts in the order they first appear.
	Hosts []string
	// N counts the findings, Waived the waived ones.
	N, Waived int

	// Findings in report order list a rule's hosts in ascending order
	// per severity, so a host repeats only right after itself; seen is
	// made for input in another order, or a rule of several severities.
	last string
	rank int
	seen map[string]bool

	facts   []string
	values  map[string]map[string]int
	sources map[string]int
}

func (g *ruleGroup) add(f *policies.Finding) {
	rank := policies.SeverityRank(f.Severity)
	if g.N == 0 {
		g.Rule, g.Title, g.Severity, g.rank = f.Rule, f.Title, f.Severity, rank
	}
	if rank > policies.SeverityRank(g.Severity) {
		g.Severity = f.Severity
	}
	switch {
	case g.N > 0 && f.Host == g.last && rank == g.rank:
	case g.seen == nil && (g.N == 0 || (rank == g.rank && f.Host > g.last)):
		g.Hosts = append(g.Hosts, f.Host)
	default:
		if g.seen == nil {
			g.seen = make(map[string]bool, len(g.Hosts))
			for _, h := range g.Hosts {
				g.seen[h] = true
			}
		}
		if !g.seen[f.Host] {
			g.seen[f.Host] = true
			g.Hosts = append(g.Hosts, f.Host)
		}
	}
	g.last, g.rank = f.Host, rank
	g.N++
	if f.Waived != nil {
		g.Waived++
	}
	// A fact and value cited twice by one finding count once.
	var cited map[[2]string]bool
	if len(f.Evidence) > 1 {
		cited = map[[2]string]bool{}
	}
	for _, e := range f.Evidence {
		fact, v := foldIndices(e.Fact), valueText(e.Value)
		if cited != nil {
			if cited[[2]string{fact, v}] {
				continue
			}
			cited[[2]string{fact, v}] = true
		}
		if g.values == nil {
			g.values = map[string]map[string]int{}
		}
		if g.values[fact] == nil {
			g.values[fact] = map[string]int{}
			g.facts = append(g.facts, fact)
		}
		g.values[fact][v]++
	}
	if p := provenance(*f); p != "" {
		if g.sources == nil {
			g.sources = map[string]int{}
		}
		g.sources[p]++
	}
}

// factValues counts the distinct values of each fact the group's findings
// cite, most common first (see evidenceValues).
func (g *ruleGroup) factValues() []factValues {
	out := make([]factValues, 0, len(g.facts))
	for _, fact := range g.facts {
		fv := factValues{Fact: fact}
		for _, v := range slices.Sorted(maps.Keys(g.values[fact])) {
			fv.Values = append(fv.Values, valueCount{v, g.values[fact][v]})
		}
		slices.SortStableFunc(fv.Values, func(a, b valueCount) int { return -cmp.Compare(a.Count, b.Count) })
		out = append(out, fv)
	}
	return out
}

// sourceCounts counts where the group's values were set (see
// groupSources).
func (g *ruleGroup) sourceCounts() []valueCount {
	var out []valueCount
	for _, s := range slices.Sorted(maps.Keys(g.sources)) {
		out = append(out, valueCount{s, g.sources[s]})
	}
	slices.SortStableFunc(out, func(a, b valueCount) int { return -cmp.Compare(a.Count, b.Count) })
	return out
}

// ruleGroups groups findings by rule as they come.
type ruleGroups struct {
	by    map[string]*ruleGroup
	order []*ruleGroup
}

func (rg *ruleGroups) add(f *policies.Finding) {
	g := rg.by[f.Rule]
	if g == nil {
		if rg.by == nil {
			rg.by = map[string]*ruleGroup{}
		}
		g = &ruleGroup{}
		rg.by[f.Rule] = g
		rg.order = append(rg.order, g)
	}
	g.add(f)
}

// sorted returns the groups most severe and widest first.
func (rg *ruleGroups) sorted() []*ruleGroup {
	out := slices.Clone(rg.order)
	slices.SortStableFunc(out, func(a, b *ruleGroup) int {
		return cmp.Or(-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
			-cmp.Compare(len(a.Hosts), len(b.Hosts)), cmp.Compare(a.Rule, b.Rule))
	})
	return out
}

// groupByRule groups findings by rule, most severe and widest first.
func groupByRule(findings []policies.Finding) []*ruleGroup {
	var rg ruleGroups
	for i := range findings {
		rg.add(&findings[i])
	}
	return rg.sorted()
}
