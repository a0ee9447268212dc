package reports

import (
	"fmt"
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

// grouper is a format that lays its findings out as Options.GroupBy says.
type grouper interface{ groupsFindings() }

func (tableFormat) groupsFindings()    {}
func (markdownFormat) groupsFindings() {}

// Groups reports whether format honours Options.GroupBy; the others
// ignore it.
func Groups(format Format) bool {
	_, ok := format.(grouper)
	return ok
}

// GroupFormats lists the formats that honour --group-by.
func GroupFormats() []string { return formatNames(Groups) }

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
				rest := len(fv.Values) - maxValues
				parts = append(parts, fmt.Sprintf("%d other %s", rest, plural(rest, "value", "values")))
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
