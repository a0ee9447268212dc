package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata")

// goldenNow is the time waivers are judged at in the golden reports: the
// first waiver is in force, the second expired.
var goldenNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

var example struct {
	once sync.Once
	res  *audit.Result
	cat  *Catalog
	err  error
}

// exampleAudit audits the example fleet (examples/fleet/inventory.yaml) for real, with the
// built-in profiles and policies, and applies testdata/waivers.yaml.
// Each caller gets its own copy of the findings.
func exampleAudit(t *testing.T) (*audit.Result, *Catalog) {
	t.Helper()
	example.once.Do(func() {
		ctx := context.Background()
		set, err := fleets.Load(true)
		if err != nil {
			example.err = err
			return
		}
		inv, err := inventory.Load("../examples/fleet/inventory.yaml")
		if err != nil {
			example.err = err
			return
		}
		example.res, example.err = audit.Run(ctx, audit.Options{Fleets: set, Inventory: inv, Snapshots: []string{"../examples/fleet/snapshots"}})
		if example.err != nil {
			return
		}
		engine, err := policies.New(ctx, policies.Options{})
		if err != nil {
			example.err = err
			return
		}
		example.cat, example.err = NewCatalog(engine.Rules(), set)
	})
	if example.err != nil {
		t.Fatal(example.err)
	}
	res := *example.res
	res.Findings = cloneFindings(res.Findings)
	ws, err := waivers.Load("testdata/waivers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res.Waivers = ws.Apply(goldenNow, res.Findings)
	return &res, example.cat
}

func cloneFindings(fs []policies.Finding) []policies.Finding {
	out := make([]policies.Finding, len(fs))
	copy(out, fs)
	return out
}

// exampleGate is the example config repo's gate (the CLI's golden gate
// document) with testdata/waivers.yaml applied to head's findings.
func exampleGate(t *testing.T) *configrepo.Result {
	t.Helper()
	data, err := os.ReadFile("../cmd/fleetaudit/testdata/gate-example.json")
	if err != nil {
		t.Fatal(err)
	}
	var res configrepo.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	ws, err := waivers.Load("testdata/waivers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var lists [][]policies.Finding
	for _, f := range res.Fleets {
		lists = append(lists, f.Introduced, f.Unchanged)
	}
	res.Waivers = ws.Apply(goldenNow, lists...)
	return &res
}

// trendBefore are three earlier runs of the example fleet, as a store
// would hand them over.
func trendBefore() []TrendPoint {
	var out []TrendPoint
	for i, rates := range [][2]int{{120, 95}, {90, 80}, {75, 60}} {
		at := goldenNow.AddDate(0, 0, -3+i)
		out = append(out,
			TrendPoint{Run: "run-" + string(rune('1'+i)), At: at, Fleet: "gpu-training", Checks: 360, Failing: rates[0], Findings: map[string]int{"critical": 9}},
			TrendPoint{Run: "run-" + string(rune('1'+i)), At: at, Fleet: "web-serving", Checks: 56, Failing: rates[1] / 5, Findings: map[string]int{"medium": 8}})
	}
	return out
}

func goldenOptions(cat *Catalog) Options {
	return Options{Width: 100, Catalog: cat, Run: RunInfo{ID: "run-4", At: goldenNow}, Trend: trendBefore(),
		OpenReports: OpenReportsOptions{Namespace: "fleetaudit", Node: goldenNode}}
}

// goldenNode: the gpu-a hosts are Kubernetes nodes, the rest are not.
func goldenNode(host string) string {
	if strings.HasPrefix(host, "gpu-a-") {
		return host
	}
	return ""
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got; go test ./reports -update rewrites it):\n%s", path, diff)
	}
}

func TestAuditGolden(t *testing.T) {
	res, cat := exampleAudit(t)
	cases := []struct {
		file, format, group string
	}{
		{"audit.table", "table", ""},
		{"audit-by-rule.table", "table", GroupRule},
		{"audit-by-host.table", "table", GroupHost},
		{"audit.json", "json", ""},
		{"audit.md", "markdown", ""},
		{"audit-by-rule.md", "markdown", GroupRule},
		{"audit-by-host.md", "markdown", GroupHost},
		{"audit.sarif", "sarif", ""},
		{"audit.junit.xml", "junit", ""},
		{"audit.prom", "prometheus", ""},
		{"audit.html", "html", ""},
		{"audit.openreports.json", "openreports", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r, err := Get(c.format)
			if err != nil {
				t.Fatal(err)
			}
			opts := goldenOptions(cat)
			opts.GroupBy = c.group
			var out bytes.Buffer
			if err := r.Render(&out, res, opts); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.file, out.Bytes())
		})
	}
}

func TestGateGolden(t *testing.T) {
	res := exampleGate(t)
	_, cat := exampleAudit(t)
	for _, format := range GateFormats() {
		file := "gate." + map[string]string{"table": "table", "json": "json", "markdown": "md", "sarif": "sarif",
			"junit": "junit.xml", "prometheus": "prom", "html": "html"}[format]
		t.Run(file, func(t *testing.T) {
			r, err := GetGate(format)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			opts := goldenOptions(cat)
			opts.Trend = nil
			if err := r.RenderGate(&out, res, opts); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, file, out.Bytes())
		})
	}
}

// Every format has a golden file: a new format without one fails here.
func TestEveryFormatHasAGolden(t *testing.T) {
	data, err := os.ReadFile("formats_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats() {
		if !strings.Contains(string(data), `"`+f+`", ""}`) {
			t.Errorf("audit format %s has no golden case in TestAuditGolden", f)
		}
	}
}

func TestWaivedFindingsAreShownNotDropped(t *testing.T) {
	res, cat := exampleAudit(t)
	if res.Waivers.Waived != 3 || res.Waivers.Expired != 1 || res.Waivers.Stale != 2 {
		t.Fatalf("waivers: %d waived, %d expired, %d stale; want 3, 1, 2", res.Waivers.Waived, res.Waivers.Expired, res.Waivers.Stale)
	}
	wantFindings := len(example.res.Findings)
	if len(res.Findings) != wantFindings {
		t.Fatalf("waivers changed the number of findings: %d, want %d", len(res.Findings), wantFindings)
	}
	for _, format := range Formats() {
		r, _ := Get(format)
		var out bytes.Buffer
		if err := r.Render(&out, res, goldenOptions(cat)); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		// Every format names the waiver's owner for the waived findings,
		// and the expired and stale waivers.
		for _, want := range []string{"alice@example.com", "bob@example.com", "carol@example.com"} {
			if !strings.Contains(s, want) {
				t.Errorf("%s does not mention %s", format, want)
			}
		}
	}
}

func TestWaiversDoNotCountTowardFailOn(t *testing.T) {
	res := exampleGate(t)
	if got := res.MaxIntroducedRank(); got != 0 {
		t.Errorf("gate with the introduced finding waived: max introduced rank %d, want 0", got)
	}
	raw := exampleGate(t)
	raw.Fleets[0].Introduced[0].Waived = nil
	if got := raw.MaxIntroducedRank(); got != policies.SeverityRank("critical") {
		t.Errorf("gate without the waiver: rank %d, want critical's", got)
	}
	a, _ := exampleAudit(t)
	for i := range a.Findings {
		if a.Findings[i].Severity == "critical" && a.Findings[i].Rule != "hugetlb-cma-on-gpu" {
			a.Findings[i].Waived = &policies.Waived{Owner: "x"}
		}
	}
	// hugetlb-cma-on-gpu is waived on 3 hosts only: still critical.
	if got := a.MaxSeverityRank(); got != policies.SeverityRank("critical") {
		t.Errorf("audit: rank %d, want critical's", got)
	}
	for i := range a.Findings {
		if a.Findings[i].Severity == "critical" {
			a.Findings[i].Waived = &policies.Waived{Owner: "x"}
		}
	}
	if got := a.MaxSeverityRank(); got != policies.SeverityRank("high") {
		t.Errorf("audit with every critical waived: rank %d, want high's", got)
	}
}
