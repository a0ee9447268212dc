package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// skippedResult: an offline image and a host with a section missing, in
// one fleet, beside a host on which every rule ran.
func skippedResult() *audit.Result {
	return &audit.Result{
		Findings: []policies.Finding{{Fleet: "gpu", Host: "gpu-01", Rule: "r1", Severity: "high", Message: "bad"}},
		Hosts: []fleetrun.HostRun{
			{Fleet: "gpu", Host: "gpu-01"},
			{Fleet: "gpu", Host: "gpu-img-01", Image: true, Skipped: []string{"r2", "r3"}},
			{Fleet: "gpu", Host: "gpu-02", Skipped: []string{"r3"}},
		},
		Summary: audit.Summary{Hosts: 3, Audited: 3, Findings: 1, BySeverity: map[string]int{"high": 1},
			RulesSkipped: map[string]int{"r2": 1, "r3": 2},
			Fleets:       map[string]audit.FleetSummary{"gpu": {Hosts: 3, BySeverity: map[string]int{"high": 1}}}},
	}
}

func renderWith(t *testing.T, format string, r *audit.Result, opts Options) string {
	t.Helper()
	f, err := Get(format)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Render(&buf, r, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestSkippedRulesTableAndMarkdown(t *testing.T) {
	for _, format := range []string{"table", "markdown"} {
		out := renderWith(t, format, skippedResult(), Options{})
		for _, want := range []string{
			"gpu-img-01: 2 rules not evaluated: offline image, no running state\n",
			"gpu-02: 1 rule not evaluated: facts not collected\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no line %q in\n%s", format, want, out)
			}
		}
		if strings.Contains(out, "gpu-01:") {
			t.Errorf("%s: a line for gpu-01, on which every rule ran:\n%s", format, out)
		}
	}
}

func TestSkippedRulesJUnit(t *testing.T) {
	out := renderWith(t, "junit", skippedResult(), Options{Catalog: &Catalog{FleetRules: map[string][]string{"gpu": {"r1", "r2", "r3"}}}})
	var s junitSuites
	if err := xml.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if len(s.Suites) != 1 {
		t.Fatalf("suites %+v", s.Suites)
	}
	suite := s.Suites[0]
	skipped := map[string]string{}
	for _, c := range suite.Cases {
		if c.Skipped != nil {
			skipped[c.Name+" | "+c.Skipped.Message] = c.Classname
		}
	}
	want := []string{
		"r2 (not evaluated) | not evaluated: offline image, no running state on 1 host: gpu-img-01",
		"r3 (not evaluated) | not evaluated: offline image, no running state on 1 host: gpu-img-01",
		"r3 (not evaluated) | not evaluated: facts not collected on 1 host: gpu-02",
	}
	for _, w := range want {
		if skipped[w] != "fleetaudit.gpu" {
			t.Errorf("no skipped case %q; skipped cases: %v", w, skipped)
		}
	}
	if len(skipped) != len(want) || suite.Skipped != len(want) || suite.Tests != 3+len(want) || suite.Failures != 1 {
		t.Errorf("suite: tests %d, failures %d, skipped %d, skipped cases %v; want %d tests, 1 failure, %d skipped",
			suite.Tests, suite.Failures, suite.Skipped, skipped, 3+len(want), len(want))
	}
}
