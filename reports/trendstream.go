package reports

import (
	"slices"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
)

// CurrentTrend is NewCompliance(res, cat, run, nil).CurrentTrend() for a
// result whose findings are streamed (audit.Options.Stream): it reads them
// through res.All instead of res.Findings, keeping per fleet and rule a
// few counters rather than every (host, rule) pair. A control counts a
// host once however many findings the rule has on it; findings come host
// by host within a severity, so one rule's findings on one host are
// consecutive unless the rule reports at several severities in the fleet
// (or the order is not the report's). Only then is a second pass made,
// holding the hosts of those rules alone.
func CurrentTrend(res *audit.Result, cat *Catalog, run RunInfo) []TrendPoint {
	type fleetRule struct{ fleet, rule string }
	type ruleState struct {
		failing, waived int
		// The open group: the rule's findings on host at rank.
		open      bool
		host      string
		rank      int
		bad       bool
		firstSeen int
		// exact: a host may have more than one group; counted in a
		// second pass.
		exact bool
	}
	unread := map[[2]string]bool{}
	audited := map[string]int{}
	skipped := map[fleetRule]int{}
	podRules := cat.podRules()
	hosts := res.HostRuns() // a streamed result's too
	for h := range hostRuns(res) {
		if h.Unread != "" {
			unread[[2]string{h.Fleet, h.Host}] = true
			continue
		}
		audited[h.Fleet]++
		for _, id := range notRun(h, podRules) {
			skipped[fleetRule{h.Fleet, id}]++
		}
	}
	if hosts == nil {
		for name, fs := range res.Summary.Fleets {
			audited[name] = fs.Hosts
		}
	}
	rules := map[fleetRule]*ruleState{}
	// unwaived counts the unwaived findings by fleet and severity.
	unwaived := map[string]map[string]int{}
	closeGroup := func(fleet string, st *ruleState) {
		if !st.open || unread[[2]string{fleet, st.host}] {
			return
		}
		if st.bad {
			st.failing++
		} else {
			st.waived++
		}
	}
	n := 0
	for f := range res.All() {
		if f.Waived == nil {
			m := unwaived[f.Fleet]
			if m == nil {
				m = map[string]int{}
				unwaived[f.Fleet] = m
			}
			m[f.Severity]++
		}
		k := fleetRule{f.Fleet, f.Rule}
		st := rules[k]
		if st == nil {
			st = &ruleState{firstSeen: n}
			rules[k] = st
			n++
		}
		rank := policies.SeverityRank(f.Severity)
		if st.open && st.host == f.Host && st.rank == rank {
			st.bad = st.bad || f.Waived == nil
			continue
		}
		if st.open && (rank != st.rank || f.Host < st.host) {
			st.exact = true
		}
		closeGroup(f.Fleet, st)
		st.open, st.host, st.rank, st.bad = true, f.Host, rank, f.Waived == nil
	}
	var exact map[fleetRule]map[string]bool
	for k, st := range rules {
		closeGroup(k.fleet, st)
		if st.exact {
			if exact == nil {
				exact = map[fleetRule]map[string]bool{}
			}
			exact[k] = map[string]bool{}
		}
	}
	if exact != nil {
		// host has an unwaived finding of the rule
		for f := range res.All() {
			if hosts, ok := exact[fleetRule{f.Fleet, f.Rule}]; ok {
				hosts[f.Host] = hosts[f.Host] || f.Waived == nil
			}
		}
		for k, hosts := range exact {
			st := rules[k]
			st.failing, st.waived = 0, 0
			for host, bad := range hosts {
				switch {
				case unread[[2]string{k.fleet, host}]:
				case bad:
					st.failing++
				default:
					st.waived++
				}
			}
		}
	}
	// The controls of each fleet as NewCompliance lists them: the
	// catalog's, then the rules with findings in the order first found.
	found := make([]fleetRule, 0, len(rules))
	for k := range rules {
		found = append(found, k)
	}
	slices.SortFunc(found, func(a, b fleetRule) int { return rules[a].firstSeen - rules[b].firstSeen })
	names := make([]string, 0, len(res.Summary.Fleets))
	for name := range res.Summary.Fleets {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []TrendPoint
	for _, name := range names {
		var ids []string
		if cat != nil {
			ids = slices.Clone(cat.FleetRules[name])
		}
		for _, k := range found {
			if k.fleet == name && k.rule != policies.CollectionErrorRule && !slices.Contains(ids, k.rule) {
				ids = append(ids, k.rule)
			}
		}
		p := TrendPoint{Run: run.ID, At: run.At, Fleet: name, Findings: map[string]int{}}
		for _, id := range ids {
			checked := max(0, audited[name]-skipped[fleetRule{name, id}])
			var failing, waived int
			if st := rules[fleetRule{name, id}]; st != nil {
				failing, waived = st.failing, st.waived
			}
			p.Checks += max(checked, failing+waived)
			p.Failing += failing
		}
		for sev, c := range unwaived[name] {
			p.Findings[sev] = c
		}
		out = append(out, p)
	}
	return out
}
