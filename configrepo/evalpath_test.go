package configrepo

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// exampleConfigRepo copies examples/config-repo into a fresh git
// repository, committed.
func exampleConfigRepo(t *testing.T) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	const src = "../examples/config-repo"
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		r.Write(filepath.ToSlash(rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Commit("example")
	return r
}

// oracleFindings are a rendered fleet's findings as the gate had them
// before it evaluated through the runner: policies' reference evaluation,
// EvalHost on the fleet's document and EvalFleet with it as the one host.
func oracleFindings(t *testing.T, ctx context.Context, engine *policies.Engine, co *Checkout, m *Manifest, name string) []policies.Finding {
	t.Helper()
	r, err := Render(ctx, co, m, name, RenderOptions{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := hostDoc(ctx, co, m, r, "test")
	if err != nil {
		t.Fatal(err)
	}
	profile := m.ProfileOf(name)
	findings, err := engine.EvalHost(ctx, doc, profile)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fleetFindings, err := engine.EvalFleet(ctx, profile, []map[string]any{engine.Project(doc)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	findings = append(findings, fleetFindings...)
	for i := range findings {
		findings[i].Fleet = name
	}
	return findings
}

// The gate's findings through the runner, with its rule budget, are the
// oracle's, finding for finding and in the same order, on the example
// config repo and on the repos of the gate's tests (host and fleet-wide
// rules, pods and jobs, a baseline).
func TestGateFindingsEqualTheOracle(t *testing.T) {
	ctx := context.Background()
	example := exampleConfigRepo(t)
	cma := exampleConfigRepo(t)
	cma.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg", hugetlbCMA)
	cma.Commit("cma")
	gpuCMA := baseRepo(t)
	gpuCMA.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg", hugetlbCMA)
	gpuCMA.Commit("cma")
	jobs := baseRepo(t)
	jobs.Write("k8s/gpu-training/pretrain.yaml", shmJob)
	jobs.Write("k8s/gpu-training/skew.yaml", strings.Replace(strings.Replace(shmJob, "name: pretrain", "name: skew", 1),
		"    Worker:", "    Master:\n      replicas: 1\n      template:\n        spec:\n          containers:\n          - {name: pytorch, image: train:2}\n    Worker:", 1))
	jobs.Commit("jobs")

	set := testFleets(t)
	engine, err := fleets.NewEngine(ctx, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	fleetRules := map[string]bool{}
	for _, r := range engine.Rules() {
		if r.Scope == policies.ScopeFleet {
			fleetRules[r.ID] = true
		}
	}
	var hostSeen, fleetSeen bool
	for name, r := range map[string]*gitRepo{"example": example, "example with hugetlb_cma": cma, "gate test repo with hugetlb_cma": gpuCMA, "gate test repo with jobs": jobs} {
		co, err := CheckoutRef(ctx, r.Dir, "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseManifest(co.Files[ManifestFile].Data)
		if err != nil {
			t.Fatal(err)
		}
		g := &gater{opts: Options{Repo: r.Dir, Fleets: set, Version: "test"}, engine: engine}
		s := &side{co: co, manifest: m}
		for _, fleet := range m.FleetNames() {
			run := g.fleet(ctx, s, fleet, t.TempDir())
			if run.err != nil || !run.audited {
				t.Fatalf("%s, fleet %s: audited %v, %v", name, fleet, run.audited, run.err)
			}
			want := oracleFindings(t, ctx, engine, co, m, fleet)
			if diff := cmp.Diff(want, run.findings); diff != "" {
				t.Errorf("%s, fleet %s: the gate's findings differ from the oracle's (-oracle +gate):\n%s", name, fleet, diff)
			}
			for _, f := range want {
				if fleetRules[f.Rule] {
					fleetSeen = true
				} else {
					hostSeen = true
				}
			}
		}
	}
	if !hostSeen || !fleetSeen {
		t.Errorf("the repos gave host findings %v, fleet-wide findings %v: the comparison needs both", hostSeen, fleetSeen)
	}
}

// slowPolicies are a host rule and a fleet-wide rule that loop for hours.
func slowPolicies(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	const loop = `
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i * j == -1
`
	host := `package fleetaudit.rules.slow

# METADATA
# title: Slow
# description: counts to ten billion
# related_resources: [{ref: "https://example.com"}]
# custom: {id: slow-host, severity: critical, profiles: [all], remediation: r, facts: [host]}
slow_host contains f if {` + loop + `	f := {"msg": "never", "evidence": ["host"]}
}
`
	fleet := `package fleetaudit.fleet_rules.slow

# METADATA
# title: Slow fleet
# description: counts to ten billion per group
# related_resources: [{ref: "https://example.com"}]
# custom: {id: slow-fleet, severity: critical, profiles: [all], remediation: r, facts: [host]}
slow_fleet contains f if {
	some g in input.groups` + loop + `	f := {"msg": "never", "evidence": ["host"], "group": g.group}
}
`
	for file, text := range map[string]string{"host.rego": host, "fleet.rego": fleet} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A rule that runs past the budget is reported as audit reports it (a
// collection-error finding naming it; a fleet-wide one an error), and it
// never lets the gate pass: each fleet side it timed out on is an error
// naming the rule, whether or not it timed out at the other side too.
func TestGateRuleTimeoutIsAnErrorNamingTheRule(t *testing.T) {
	r := baseRepo(t)
	base := r.Git("rev-parse", "HEAD")
	r.Write("layers/web/etc/sysctl.d/60-net.conf", "net.core.somaxconn = 512\n")
	head := r.Commit("lower somaxconn")
	// "Does not hang": without the budget the rules run for hours.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const budget = 100 * time.Millisecond
	res, err := Run(ctx, Options{Repo: r.Dir, Base: base, Head: head, Fleets: testFleets(t), PolicyDirs: []string{slowPolicies(t)}, RuleTimeout: budget})
	if err != nil {
		t.Fatal(err)
	}
	sides := map[string]bool{}
	for _, e := range res.Errors {
		if !slices.Contains(e.TimedOut, "slow-host") || !slices.Contains(e.TimedOut, "slow-fleet") ||
			!strings.Contains(e.Error, "did not finish within 100ms") || !strings.Contains(e.Error, "slow-host") {
			t.Errorf("error %+v: want slow-host and slow-fleet named as over the budget", e)
		}
		sides[e.Fleet+" at "+e.Ref] = true
	}
	if len(sides) != 4 {
		t.Errorf("errors at %v, want both fleets at both refs", sides)
	}
	web := fleetResult(t, res, "web-serving")
	if web.Status != "changed" || !slices.Equal(rules(web.Introduced), []string{"somaxconn-low"}) {
		t.Errorf("web-serving: %s, introduced %v: the findings of the rules that finished are lost", web.Status, rules(web.Introduced))
	}
	want := "rule slow-host did not finish within 100ms; its findings for this host are unknown"
	for _, fr := range res.Fleets {
		if !slices.ContainsFunc(fr.Unchanged, func(f policies.Finding) bool { return f.Rule == "collection-error" && f.Message == want }) {
			t.Errorf("%s: no collection-error %q among %v", fr.Fleet, want, fr.Unchanged)
		}
	}
}

// The gate's budget is audit's: 0 is fleetrun.DefaultHostTimeout, and a
// negative one no limit (a rule that finishes is never cut short).
func TestGateRuleBudgetDefault(t *testing.T) {
	for _, c := range []struct {
		set, want time.Duration
	}{{0, fleetrun.DefaultHostTimeout}, {time.Second, time.Second}} {
		if got := (&gater{opts: Options{RuleTimeout: c.set}}).budget(); got != c.want {
			t.Errorf("RuleTimeout %s: budget %s, want %s", c.set, got, c.want)
		}
	}
	r := baseRepo(t)
	res, err := Run(context.Background(), Options{Repo: r.Dir, Base: "HEAD", Head: "HEAD", Fleets: testFleets(t), RuleTimeout: -1})
	if err != nil || len(res.Errors) != 0 {
		t.Fatalf("no limit: %v %+v", err, res.Errors)
	}
}
