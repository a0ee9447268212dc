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
// hosts named in runs costs a few ranges of names.
type ruleGroup struct {
	Rule, Title, Severity string
	// Hosts are the distinct hosts, kept as ranges of names (hostSet).
	Hosts hostSet
	// N counts the findings, Waived the waived ones. Severity is the
	// highest of the open ones (of the waived when all are), Open counts
	// the open ones by severity: the mix behind the label.
	N, Waived int
	Open      map[string]int

	// Counters of each fact's distinct values and of each source. A
	// finding that the stream says is shared (audit.Result.All) cites what
	// the finding it shares does: its counters are found once and kept.
	facts   []string
	values  map[string]map[string]*int
	sources map[string]*int
	shared  map[*policies.Finding][]*int
	enc     valueEncoder
}

// add counts one finding; shared is what audit.Result.All yields with it
// (nil: not shared).
func (g *ruleGroup) add(f, shared *policies.Finding) {
	open, allWaived := f.Waived == nil, g.N == g.Waived
	switch {
	case g.N == 0:
		g.Rule, g.Title, g.Severity = f.Rule, f.Title, f.Severity
	case open && allWaived:
		g.Severity = f.Severity // a waived finding labels no group with open ones
	case (open || allWaived) && policies.SeverityRank(f.Severity) > policies.SeverityRank(g.Severity):
		g.Severity = f.Severity
	}
	g.Hosts.add(f.Host)
	g.N++
	if open {
		if g.Open == nil {
			g.Open = map[string]int{}
		}
		g.Open[f.Severity]++
	} else {
		g.Waived++
	}
	if shared != nil {
		if cells, ok := g.shared[shared]; ok {
			for _, c := range cells {
				*c++
			}
			return
		}
	}
	var buf [16]*int
	cells := g.count(f, buf[:0])
	if shared != nil {
		if g.shared == nil {
			g.shared = map[*policies.Finding][]*int{}
		}
		g.shared[shared] = slices.Clone(cells)
	}
}

// count counts the values f cites and where it was set, and appends the
// counters it added to to cells.
func (g *ruleGroup) count(f *policies.Finding, cells []*int) []*int {
	for _, e := range f.Evidence {
		fact := foldIndices(e.Fact)
		byValue := g.values[fact]
		if byValue == nil {
			if g.values == nil {
				g.values = map[string]map[string]*int{}
			}
			byValue = map[string]*int{}
			g.values[fact] = byValue
			g.facts = append(g.facts, fact)
		}
		var c *int
		if text, ok := g.enc.text(e.Value); ok {
			c = byValue[string(text)] // looked up without a copy
			if c == nil {
				c = new(int)
				byValue[string(text)] = c
			}
		} else {
			text := slowValueText(e.Value)
			if c = byValue[text]; c == nil {
				c = new(int)
				byValue[text] = c
			}
		}
		// A fact and value cited twice by one finding count once.
		if slices.Contains(cells, c) {
			continue
		}
		*c++
		cells = append(cells, c)
	}
	if p := provenance(*f); p != "" {
		c := g.sources[p]
		if c == nil {
			if g.sources == nil {
				g.sources = map[string]*int{}
			}
			c = new(int)
			g.sources[p] = c
		}
		*c++
		cells = append(cells, c)
	}
	return cells
}

// factValues counts the distinct values of each fact the group's findings
// cite, most common first. List indices in fact paths (pods.3.name) are
// folded to "*" so the same fact on different hosts counts together.
func (g *ruleGroup) factValues() []factValues {
	out := make([]factValues, 0, len(g.facts))
	for _, fact := range g.facts {
		fv := factValues{Fact: fact}
		for _, v := range slices.Sorted(maps.Keys(g.values[fact])) {
			fv.Values = append(fv.Values, valueCount{v, *g.values[fact][v]})
		}
		slices.SortStableFunc(fv.Values, func(a, b valueCount) int { return -cmp.Compare(a.Count, b.Count) })
		out = append(out, fv)
	}
	return out
}

// sourceCounts counts where the group's values were set, the provenance of
// each finding, most common first.
func (g *ruleGroup) sourceCounts() []valueCount {
	var out []valueCount
	for _, s := range slices.Sorted(maps.Keys(g.sources)) {
		out = append(out, valueCount{s, *g.sources[s]})
	}
	slices.SortStableFunc(out, func(a, b valueCount) int { return -cmp.Compare(a.Count, b.Count) })
	return out
}

// ruleGroups groups findings by rule as they come.
type ruleGroups struct {
	by    map[string]*ruleGroup
	order []*ruleGroup
}

func (rg *ruleGroups) add(f, shared *policies.Finding) {
	g := rg.by[f.Rule]
	if g == nil {
		if rg.by == nil {
			rg.by = map[string]*ruleGroup{}
		}
		g = &ruleGroup{}
		rg.by[f.Rule] = g
		rg.order = append(rg.order, g)
	}
	g.add(f, shared)
}

// sorted returns the groups most severe and widest first.
func (rg *ruleGroups) sorted() []*ruleGroup {
	out := slices.Clone(rg.order)
	hosts := make(map[*ruleGroup]int, len(out))
	for _, g := range out {
		hosts[g] = g.Hosts.Len()
	}
	slices.SortStableFunc(out, func(a, b *ruleGroup) int {
		return cmp.Or(-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
			-cmp.Compare(hosts[a], hosts[b]), cmp.Compare(a.Rule, b.Rule))
	})
	return out
}

// findingCounts counts a section's findings as they stream: all, waived,
// and the others by severity.
type findingCounts struct {
	n        int
	waived   int
	unwaived map[string]int
}

func (c *findingCounts) count(f *policies.Finding) {
	c.n++
	if f.Waived != nil {
		c.waived++
		return
	}
	if c.unwaived == nil {
		c.unwaived = map[string]int{}
	}
	c.unwaived[f.Severity]++
}

// mixLine writes the severities behind a group's label, "1 critical, 9
// high"; "" when they are all one.
func mixLine(bySeverity map[string]int) string {
	n := 0
	for _, c := range bySeverity {
		if c > 0 {
			n++
		}
	}
	if n < 2 {
		return ""
	}
	return countLine(bySeverity)
}
