package reports

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/policies"
)

// Grouping modes for Options.GroupBy.
const (
	GroupNone = "none"
	GroupRule = "rule"
	GroupHost = "host"
)

// GroupModes are the values --group-by takes.
var GroupModes = []string{GroupRule, GroupHost, GroupNone}

// GroupAutoHosts is the fleet size above which the table and Markdown group
// by rule unless told otherwise: past a few dozen hosts one row per finding
// repeats each finding once per host.
const GroupAutoHosts = 48

// CheckGroupBy refuses an unknown --group-by value.
func CheckGroupBy(mode string) error {
	if mode == "" || slices.Contains(GroupModes, mode) {
		return nil
	}
	return fmt.Errorf("unknown grouping %q: want one of %s", mode, strings.Join(GroupModes, ", "))
}

// groupMode resolves "" for a run of hosts hosts.
func groupMode(mode string, hosts int) string {
	if mode != "" {
		return mode
	}
	if hosts > GroupAutoHosts {
		return GroupRule
	}
	return GroupNone
}

// groupByHost groups findings by host in the order hosts first appear.
func groupByHost(findings []policies.Finding) (hosts []string, by map[string][]policies.Finding) {
	by = map[string][]policies.Finding{}
	for _, f := range findings {
		if _, ok := by[f.Host]; !ok {
			hosts = append(hosts, f.Host)
		}
		by[f.Host] = append(by[f.Host], f)
	}
	return hosts, by
}

// valueCount is one distinct evidence value and how many findings hold it.
type valueCount struct {
	Value string
	Count int
}

// factValues are the distinct values one fact takes across a group.
type factValues struct {
	Fact   string
	Values []valueCount
}

// evidenceValues counts the distinct values of each fact a group's
// findings cite, most common first. List indices in fact paths
// (pods.3.name) are folded to "*" so the same fact on different hosts
// counts together.
func evidenceValues(findings []policies.Finding) []factValues {
	counts := map[string]map[string]int{}
	var facts []string
	for _, f := range findings {
		seen := map[string]bool{}
		for _, e := range f.Evidence {
			fact := foldIndices(e.Fact)
			v := valueText(e.Value)
			if seen[fact+"\x00"+v] {
				continue
			}
			seen[fact+"\x00"+v] = true
			if counts[fact] == nil {
				counts[fact] = map[string]int{}
				facts = append(facts, fact)
			}
			counts[fact][v]++
		}
	}
	out := make([]factValues, 0, len(facts))
	for _, fact := range facts {
		fv := factValues{Fact: fact}
		for _, v := range slices.Sorted(maps.Keys(counts[fact])) {
			fv.Values = append(fv.Values, valueCount{v, counts[fact][v]})
		}
		slices.SortStableFunc(fv.Values, func(a, b valueCount) int { return -cmp.Compare(a.Count, b.Count) })
		out = append(out, fv)
	}
	return out
}

func foldIndices(fact string) string {
	if !hasIndex(fact) {
		return fact // most facts: no copy
	}
	parts := strings.Split(fact, ".")
	for i, p := range parts {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			parts[i] = "*"
		}
	}
	return strings.Join(parts, ".")
}

// hasIndex reports whether a part of a fact path is all digits.
func hasIndex(fact string) bool {
	digits, n := true, 0 // whether the part so far is digits, its length
	for i := 0; i <= len(fact); i++ {
		if i == len(fact) || fact[i] == '.' {
			if digits && n > 0 {
				return true
			}
			digits, n = true, 0
			continue
		}
		digits = digits && fact[i] >= '0' && fact[i] <= '9'
		n++
	}
	return false
}

// valuesLine writes a group's facts and values as "fact: v ×N, w ×M"
// lines, at most maxFacts facts and maxValues values each.
func valuesLines(fvs []factValues, maxFacts, maxValues int) []string {
	var lines []string
	for i, fv := range fvs {
		if i == maxFacts {
			lines = append(lines, fmt.Sprintf("(%d more facts)", len(fvs)-maxFacts))
			break
		}
		var parts []string
		for j, vc := range fv.Values {
			if j == maxValues {
				parts = append(parts, fmt.Sprintf("%d other values", len(fv.Values)-maxValues))
				break
			}
			parts = append(parts, fmt.Sprintf("%s ×%d", truncate(vc.Value, 60), vc.Count))
		}
		lines = append(lines, fv.Fact+": "+strings.Join(parts, ", "))
	}
	return lines
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// groupSources counts where a group's values were set: the provenance of
// each finding, most common first.
func groupSources(findings []policies.Finding) []valueCount {
	counts := map[string]int{}
	for _, f := range findings {
		if p := provenance(f); p != "" {
			counts[p]++
		}
	}
	var out []valueCount
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, valueCount{s, counts[s]})
	}
	slices.SortStableFunc(out, func(a, b valueCount) int { return -cmp.Compare(a.Count, b.Count) })
	return out
}

// sourcesLine names the most common provenance and how many others.
func sourcesLine(srcs []valueCount) string {
	switch len(srcs) {
	case 0:
		return ""
	case 1:
		return srcs[0].Value
	}
	return fmt.Sprintf("%s (×%d; %d other %s)", srcs[0].Value, srcs[0].Count, len(srcs)-1, plural(len(srcs)-1, "file", "files"))
}

// waivedLine says which waiver covers a finding.
func waivedLine(w *policies.Waived) string {
	return fmt.Sprintf("waived until %s by %s (%s): %s", w.Expires, w.Owner, w.Source, w.Justification)
}
