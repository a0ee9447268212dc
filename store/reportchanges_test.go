package store

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
)

// recordAt records an audit of the snapshots in dir, with the example
// inventory, as a run started at at.
func recordAt(t *testing.T, s Store, dir string, at time.Time) (RunID, *audit.Result) {
	t.Helper()
	ctx := context.Background()
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(filepath.Join(exampleFleet, "inventory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Begin(ctx, s, RunMeta{Version: "test", Writer: "test", StartedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	res, err := audit.Run(ctx, audit.Options{Fleets: set, Inventory: inv, Snapshots: []string{dir}, Loaded: rec.Loaded})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, res, nil); err != nil {
		t.Fatal(err)
	}
	return rec.ID(), res
}

// numaFleet is the example fleet with kernel.numa_balancing set to off on
// the hosts named, and the hosts in drop left out.
func numaFleet(t *testing.T, off []string, drop ...string) string {
	return copyFleet(t, func(host string, doc map[string]any) any {
		for _, h := range drop {
			if h == host {
				return nil
			}
		}
		for _, h := range off {
			if h == host {
				doc["sysctl"].(map[string]any)["running"].(map[string]any)["kernel.numa_balancing"] = "0"
			}
		}
		return doc
	})
}

func findingOf(t *testing.T, fs []policies.Finding, host, rule string) *policies.Finding {
	t.Helper()
	for i := range fs {
		if fs[i].Host == host && fs[i].Rule == rule {
			return &fs[i]
		}
	}
	t.Fatalf("no %s finding on %s", rule, host)
	return nil
}

// FirstSeen walks back over the runs: a finding is first seen in the
// first run of its unbroken stretch. A run that read the host and did not
// find it breaks the stretch; a run that did not read the host does not.
func TestReportFirstSeen(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "store.db"))
	day := func(d int) time.Time { return time.Date(2026, 11, d, 2, 0, 0, 0, time.UTC) }
	// gpu-a-001 turns NUMA balancing off on the 10th and on again on the
	// 24th; gpu-a-003's snapshot is missing on the 10th (not read).
	r1, _ := recordAt(t, s, numaFleet(t, nil), day(1))
	r2, _ := recordAt(t, s, numaFleet(t, []string{"gpu-a-001"}, "gpu-a-003"), day(10))
	r3, _ := recordAt(t, s, numaFleet(t, nil), day(24))
	r4, res := recordAt(t, s, numaFleet(t, nil), day(30))
	run := reports.RunInfo{ID: strconv.FormatInt(int64(r4), 10), At: day(30)}
	id := func(r RunID) string { return strconv.FormatInt(int64(r), 10) }

	seen, err := FirstSeen(ctx, s, r4, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host    string
		want    reports.FirstSeen
		wantFor string
	}{
		// In every run: as old as the history read.
		{"gpu-a-002", reports.FirstSeen{Run: id(r1), At: day(1), AtLeast: true}, "open 29 days or more"},
		// Not read on the 10th: that run says nothing, the stretch goes on.
		{"gpu-a-003", reports.FirstSeen{Run: id(r1), At: day(1), AtLeast: true}, "open 29 days or more"},
		// Resolved on the 10th, back on the 24th.
		{"gpu-a-001", reports.FirstSeen{Run: id(r3), At: day(24)}, "open 6 days"},
	} {
		f := findingOf(t, res.Findings, tc.host, "numa-balancing-enabled")
		got, ok := seen[reports.SeenKey(f)]
		if !ok || got != tc.want {
			t.Errorf("%s: first seen %+v (known %v), want %+v", tc.host, got, ok, tc.want)
		}
		if text := seen.OpenFor(f, run); text != tc.wantFor {
			t.Errorf("%s: %q, want %q", tc.host, text, tc.wantFor)
		}
	}

	// Read from the 5th on, the oldest run read is the 10th's.
	seen, err = FirstSeen(ctx, s, r4, day(5))
	if err != nil {
		t.Fatal(err)
	}
	if got := seen[reports.SeenKey(findingOf(t, res.Findings, "gpu-a-002", "numa-balancing-enabled"))]; got != (reports.FirstSeen{Run: id(r2), At: day(10), AtLeast: true}) {
		t.Errorf("since the 5th: gpu-a-002 first seen %+v, want run %d, at least", got, r2)
	}
	// A store without FindingKeys is read through Findings, to the same
	// answer.
	var plain struct{ Store }
	plain.Store = s
	if _, ok := any(plain).(findingKeyer); ok {
		t.Fatal("the wrapped store still lists finding keys")
	}
	viaFindings, err := FirstSeen(ctx, plain, r4, day(5))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seen, viaFindings); diff != "" {
		t.Errorf("FirstSeen through Findings (-FindingKeys +Findings):\n%s", diff)
	}
	// The first run has no history to tell.
	if seen, err := FirstSeen(ctx, s, r1, time.Time{}); err != nil || seen != nil {
		t.Errorf("first run: %v, %v; want nil", seen, err)
	}
}

// countingStore counts the reads of each run's findings and hosts.
type countingStore struct {
	Store
	findings, hosts map[RunID]int
}

func (c *countingStore) Findings(ctx context.Context, id RunID) ([]Finding, error) {
	c.findings[id]++
	return c.Store.Findings(ctx, id)
}

// FindingKeys and findingRefs pass through: an SQL store's reads that
// decode no finding.
func (c *countingStore) FindingKeys(ctx context.Context, id RunID) ([]string, error) {
	return c.Store.(findingKeyer).FindingKeys(ctx, id)
}

func (c *countingStore) findingRefs(ctx context.Context, id RunID) ([]findingRef, error) {
	return c.Store.(findingReffer).findingRefs(ctx, id)
}

func (c *countingStore) Hosts(ctx context.Context, id RunID) ([]Host, error) {
	c.hosts[id]++
	return c.Store.Hosts(ctx, id)
}

// A report reads its run's findings and hosts once, for its result, its
// changes and its first-seen dates (LoadResult, ReportChanges and
// FirstSeen each read them), and gets what those three give; of the
// previous run it decodes the findings this run does not match only.
func TestReportRunReadsTheRunOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		day := func(d int) time.Time { return time.Date(2026, 11, d, 2, 0, 0, 0, time.UTC) }
		recordAt(t, s, numaFleet(t, nil), day(1))
		r2, _ := recordAt(t, s, numaFleet(t, []string{"gpu-a-001"}, "gpu-a-003"), day(10))
		r3, _ := recordAt(t, s, numaFleet(t, []string{"gpu-a-002"}), day(24))

		wantRes, wantRun, err := LoadResult(ctx, s, r3)
		if err != nil {
			t.Fatal(err)
		}
		wantChanges, err := ReportChanges(ctx, s, r3)
		if err != nil {
			t.Fatal(err)
		}
		wantSeen, err := FirstSeen(ctx, s, r3, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if wantChanges == nil || len(wantChanges.New)+len(wantChanges.Resolved) == 0 || len(wantSeen) == 0 {
			t.Fatalf("the runs should differ: changes %+v, seen %v", wantChanges, wantSeen)
		}

		c := &countingStore{Store: s, findings: map[RunID]int{}, hosts: map[RunID]int{}}
		rr, err := LoadReportRun(ctx, c, r3)
		if err != nil {
			t.Fatal(err)
		}
		changes, err := rr.Changes(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		seen, err := rr.FirstSeen(ctx, c, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if c.findings[r3] != 1 || c.hosts[r3] != 1 {
			t.Errorf("run %d read: findings %d times, hosts %d times; want once each", r3, c.findings[r3], c.hosts[r3])
		}
		if c.findings[r2] != 0 {
			t.Errorf("the previous run's findings were all decoded (%d times)", c.findings[r2])
		}
		for _, p := range []struct {
			what      string
			want, got any
		}{{"result", wantRes, rr.Result()}, {"findings", wantRes.Findings, rr.Result().Findings}, {"hosts", wantRes.Hosts, rr.Result().Hosts}, {"rules", wantRes.Rules, rr.Result().Rules}} {
			want, _ := json.Marshal(p.want)
			got, _ := json.Marshal(p.got)
			if !bytes.Equal(want, got) {
				t.Errorf("%s: ReportRun's differs from LoadResult's", p.what)
			}
		}
		if d := cmp.Diff(wantRun, rr.Run(), cmp.AllowUnexported(Run{})); d != "" {
			t.Errorf("run (-LoadResult +ReportRun):\n%s", d)
		}
		if d := cmp.Diff(wantChanges, changes); d != "" {
			t.Errorf("changes (-ReportChanges +ReportRun):\n%s", d)
		}
		if d := cmp.Diff(wantSeen, seen); d != "" {
			t.Errorf("first seen (-FirstSeen +ReportRun):\n%s", d)
		}
	})
}

// The findings read back share the strings they repeat (a rule's title,
// remediation and references; hosts; facts) instead of holding a copy
// each: a large run's findings are mostly such strings.
func TestFindingsShareRepeatedStrings(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		id, _ := record(t, s, copyFleet(t, nil))
		fs, err := s.Findings(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		byRule := map[string]*policies.Finding{}
		pairs := 0
		for i := range fs {
			f := &fs[i].Finding
			g := byRule[f.Rule]
			if g == nil {
				byRule[f.Rule] = f
				continue
			}
			pairs++
			if f.Remediation != "" && unsafe.StringData(f.Remediation) != unsafe.StringData(g.Remediation) {
				t.Errorf("%s: two findings hold the remediation apart", f.Rule)
			}
			if f.Title != "" && unsafe.StringData(f.Title) != unsafe.StringData(g.Title) {
				t.Errorf("%s: two findings hold the title apart", f.Rule)
			}
			if len(f.References) > 0 && &f.References[0] != &g.References[0] {
				t.Errorf("%s: two findings hold the references apart", f.Rule)
			}
		}
		if pairs == 0 {
			t.Fatal("no rule with two findings")
		}
	})
}
