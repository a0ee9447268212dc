package collectors

import (
	"context"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// evalRules evaluates rules, with params, on snap and returns their
// findings in the engine's order (collection errors of other rules left out).
func evalRules(t *testing.T, snap *snapshot.Snapshot, params map[string]any, rules ...string) []policies.Finding {
	t.Helper()
	ctx := context.Background()
	doc, err := snapshot.Document(snap)
	if err != nil {
		t.Fatal(err)
	}
	e, err := policies.New(ctx, policies.Options{Fleets: map[string]policies.FleetConfig{
		"gpu": {Select: func(r policies.Rule) bool { return slices.Contains(rules, r.ID) }, Params: params},
	}})
	if err != nil {
		t.Fatal(err)
	}
	findings, err := e.EvalHost(ctx, doc, "gpu")
	if err != nil {
		t.Fatal(err)
	}
	var out []policies.Finding
	for _, f := range findings {
		if slices.Contains(rules, f.Rule) {
			out = append(out, f)
		}
	}
	return out
}

// evidenceFrom is where finding f says fact was set, "" when it does not
// cite fact.
func evidenceFrom(f policies.Finding, fact string) string {
	i := slices.IndexFunc(f.Evidence, func(e policies.Evidence) bool { return e.Fact == fact })
	if i < 0 {
		return ""
	}
	return f.Evidence[i].Source
}
