package reports

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/policies"
)

// A finding the stream marks as shared is counted through the counters of
// the first host that yielded it: the groups are those of counting every
// finding on its own.
func TestRuleGroupsCountSharedFindingsAsTheirOwn(t *testing.T) {
	res, _ := exampleAudit(t)
	type item struct {
		f      policies.Finding
		shared *policies.Finding
	}
	var stream []item
	for copy := range 3 {
		for i := range res.Findings {
			tmpl := &res.Findings[i]
			f := *tmpl
			f.Host = fmt.Sprintf("%s-%d", tmpl.Host, copy)
			var shared *policies.Finding
			if !citesHost(tmpl) {
				shared = tmpl
			}
			stream = append(stream, item{f, shared})
		}
	}
	var alone, withShared ruleGroups
	var cur policies.Finding // as audit.Result.All: one finding, reused
	for i := range stream {
		alone.add(&stream[i].f, nil)
		cur = stream[i].f
		withShared.add(&cur, stream[i].shared)
	}
	type view struct {
		Rule, Severity string
		Hosts          string
		N, Waived      int
		Values         []factValues
		Sources        []valueCount
	}
	views := func(rg *ruleGroups) []view {
		var out []view
		for _, g := range rg.sorted() {
			out = append(out, view{g.Rule, g.Severity, g.Hosts.fold(0), g.N, g.Waived, g.factValues(), g.sourceCounts()})
		}
		return out
	}
	want := views(&alone)
	if diff := cmp.Diff(want, views(&withShared)); diff != "" {
		t.Errorf("shared findings counted differently (-alone +shared):\n%s", diff)
	}
	reused := 0
	for _, g := range withShared.order {
		reused += len(g.shared)
	}
	if reused == 0 {
		t.Fatal("no shared finding took the shared way")
	}
}

func citesHost(f *policies.Finding) bool {
	for _, e := range f.Evidence {
		if e.Fact == "host" {
			return true
		}
	}
	return false
}

func TestValuesLinesCountWhatTheyLeaveOut(t *testing.T) {
	fvs := []factValues{
		{"a", []valueCount{{"x", 3}, {"y", 2}, {"z", 1}}},
		{"b", []valueCount{{"x", 3}, {"y", 2}, {"z", 1}, {"w", 1}}},
		{"c", []valueCount{{"x", 1}}},
	}
	want := []string{"a: x ×3, y ×2, 1 other value", "b: x ×3, y ×2, 2 other values", "(1 more facts)"}
	if diff := cmp.Diff(want, valuesLines(fvs, 2, 2)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
