package reports

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// CurrentTrend on the example fleet's findings, collected or streamed with
// the waivers marking them as they are read, is NewCompliance's trend.
func TestCurrentTrendOfExampleFleet(t *testing.T) {
	res, cat := exampleAudit(t)
	run := RunInfo{ID: "7", At: goldenNow}
	for _, c := range []*Catalog{cat, nil} {
		want := NewCompliance(res, c, run, nil).CurrentTrend()
		if len(want) == 0 || want[0].Failing == 0 {
			t.Fatalf("the example fleet's trend %+v: nothing to compare", want)
		}
		if diff := cmp.Diff(want, CurrentTrend(res, c, run)); diff != "" {
			t.Errorf("collected findings, catalog %v (-NewCompliance +CurrentTrend):\n%s", c != nil, diff)
		}
	}

	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load("../examples/fleet/inventory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := audit.Run(context.Background(), audit.Options{Fleets: set, Inventory: inv, Snapshots: []string{"../examples/fleet/snapshots"}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := waivers.Load("testdata/waivers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	streamed.Waivers = streamed.ApplyWaivers(ws, goldenNow)
	if streamed.Findings != nil {
		t.Fatal("the streamed result collected its findings")
	}
	want := NewCompliance(res, cat, run, nil).CurrentTrend()
	for pass := range 2 {
		if diff := cmp.Diff(want, CurrentTrend(streamed, cat, run)); diff != "" {
			t.Errorf("streamed findings, read %d times before (-collected +streamed):\n%s", pass, diff)
		}
	}
}

// A rule that reports one host at two severities, findings out of the
// report's order, waived findings, an unread host and skipped rules:
// each (host, rule) still counts once, as NewCompliance counts it.
func TestCurrentTrendCountsEachHostOnce(t *testing.T) {
	waived := &policies.Waived{Owner: "alice@example.com", Justification: "drained"}
	f := func(fleet, host, rule, sev string, w *policies.Waived) policies.Finding {
		return policies.Finding{Fleet: fleet, Host: host, Rule: rule, Severity: sev, Waived: w}
	}
	res := &audit.Result{
		Findings: []policies.Finding{
			f("gpu", "a", "r1", "critical", nil),
			f("gpu", "a", "r1", "critical", waived),
			f("gpu", "b", "r1", "critical", waived),
			f("gpu", "c", "r2", "high", waived),
			f("gpu", "a", "r1", "low", nil), // r1 again on a, at another severity
			f("gpu", "b", "r1", "low", nil), // b's r1 is unwaived after all
			f("gpu", "d", "r3", "medium", nil),
			f("gpu", "e", "r3", "medium", nil), // e is unread
			f("gpu", "e", policies.CollectionErrorRule, "high", nil),
			f("gpu", "c", "r4", "high", waived),
			f("gpu", "b", "r4", "high", nil), // out of host order
			f("gpu", "c", "r4", "high", nil),
			f("web", "w", "r2", "high", nil),
			f("web", "w", "r5", "info", waived),
		},
		Hosts: []fleetrun.HostRun{
			{Fleet: "gpu", Host: "a"}, {Fleet: "gpu", Host: "b", Skipped: []string{"r2"}},
			{Fleet: "gpu", Host: "c"}, {Fleet: "gpu", Host: "d"}, {Fleet: "gpu", Host: "e", Unread: "no such file"},
			{Fleet: "web", Host: "w"}, {Fleet: "web", Host: "x", Skipped: []string{"r2", "r6"}},
		},
		Summary: audit.Summary{Fleets: map[string]audit.FleetSummary{"gpu": {Hosts: 5}, "web": {Hosts: 2}, "empty": {}}},
	}
	cat := &Catalog{FleetRules: map[string][]string{"gpu": {"r2", "r6"}, "web": {"r6", "r6"}}}
	run := RunInfo{ID: "1", At: goldenNow}
	for _, c := range []*Catalog{cat, nil} {
		want := NewCompliance(res, c, run, nil).CurrentTrend()
		if diff := cmp.Diff(want, CurrentTrend(res, c, run)); diff != "" {
			t.Errorf("catalog %v (-NewCompliance +CurrentTrend):\n%s", c != nil, diff)
		}
	}
	// The counts themselves, so that the two cannot agree on a mistake:
	// gpu's r1 fails on a and b, r2 is waived on c, r3 fails on d (e is
	// unread), r4 fails on b and c.
	got := CurrentTrend(res, cat, run)
	if got[1].Fleet != "gpu" || got[1].Failing != 5 {
		t.Errorf("gpu's trend point %+v, want 5 failing", got[1])
	}
}
