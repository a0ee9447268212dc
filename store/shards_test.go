package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/reports"
)

// recordPart audits the example fleet's hosts that keep says, recording
// them with meta, as one runner of a sharded run does.
func recordPart(t *testing.T, s Store, dir string, meta RunMeta, keep func(string) bool) (*Recorder, *audit.Result) {
	t.Helper()
	rec, res, err := recordPartErr(s, dir, meta, keep)
	if err != nil {
		t.Fatal(err)
	}
	return rec, res
}

func recordPartErr(s Store, dir string, meta RunMeta, keep func(string) bool) (*Recorder, *audit.Result, error) {
	ctx := context.Background()
	set, err := fleets.Load(true)
	if err != nil {
		return nil, nil, err
	}
	inv, err := inventory.Load(filepath.Join(exampleFleet, "inventory.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var hosts []inventory.Host
	for _, h := range inv.Hosts {
		if keep(h.Name) {
			hosts = append(hosts, h)
		}
	}
	inv.Hosts = hosts
	meta.Version, meta.Writer = "test", fmt.Sprintf("runner-%d", meta.Shard)
	rec, err := Begin(ctx, s, meta)
	if err != nil {
		return nil, nil, err
	}
	res, err := audit.Run(ctx, audit.Options{Fleets: set, Inventory: inv, Snapshots: []string{dir}, Loaded: rec.Loaded, Shard: keep})
	if err != nil {
		return nil, nil, err
	}
	trend := []reports.TrendPoint{{Fleet: "gpu-training", Checks: 10, Failing: 3, Findings: map[string]int{"critical": 2}}}
	return rec, res, rec.Finish(ctx, res, trend)
}

// Two runners record the two shards of one named run: until both have,
// readers see one incomplete run naming the missing (then failed) shard,
// with no counts, hosts or findings; once both have, one complete run
// whose hosts, findings, summary and counts are the unsharded run's. A
// shard recorded already is refused; a failed one is replaced by its
// retry; drift, the trend and prune take the run whole.
func TestShardedRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		dir := copyFleet(t, nil)
		all := func(string) bool { return true }
		odd := func(h string) bool { return len(h)%2 == 1 }
		even := func(h string) bool { return len(h)%2 == 0 }

		whole := openTest(t, be.new(t))
		wholeRec, _ := recordPart(t, whole, dir, RunMeta{}, all)
		want, _, err := LoadResult(ctx, whole, wholeRec.ID())
		if err != nil {
			t.Fatal(err)
		}

		s := openTest(t, be.new(t))
		night := RunMeta{Name: "nightly-2026-12-07", Shard: 1, Shards: 2}
		first, _ := recordPart(t, s, dir, night, odd)

		// One shard of two: an incomplete run, the other shard named.
		runs, err := s.Runs(ctx, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].ID != first.ID() || runs[0].State != Incomplete || runs[0].Hosts != 0 ||
			!strings.Contains(runs[0].Error, "shard 2/2 missing") || len(runs[0].Shards) != 2 || runs[0].Shards[1].State != Missing {
			t.Fatalf("runs with a shard missing = %+v", runs)
		}
		if cs, err := s.Counts(ctx, []RunID{first.ID()}); err != nil || len(cs) != 0 {
			t.Errorf("counts of a run with a shard missing = %v, %v", cs, err)
		}
		if ps, err := s.Trend(ctx, []RunID{first.ID()}); err != nil || len(ps) != 0 {
			t.Errorf("trend of a run with a shard missing = %v, %v", ps, err)
		}
		if _, _, err := LoadResult(ctx, s, first.ID()); !errors.Is(err, ErrNotComplete) || !strings.Contains(err.Error(), "shard 2/2 missing") {
			t.Errorf("reading a run with a shard missing: %v", err)
		}
		if _, err := Resolve(ctx, s, "latest"); !errors.Is(err, ErrNoRun) {
			t.Errorf("latest with a shard missing: %v", err)
		}
		var table bytes.Buffer
		h, err := LoadHistory(ctx, s, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if err := HistoryTable(&table, h, 200); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(table.String(), "nightly-2026-12-07") || !strings.Contains(table.String(), "shard 2/2 missing") || len(h.Runs[0].Fleets) != 0 {
			t.Errorf("history with a shard missing:\n%s", table.String())
		}

		// Refused: the recorded shard again, another count of shards.
		if _, err := s.BeginRun(ctx, RunMeta{Name: night.Name, Shard: 1, Shards: 2}); err == nil || !strings.Contains(err.Error(), "recorded already") {
			t.Errorf("shard 1/2 again: %v", err)
		}
		if _, err := s.BeginRun(ctx, RunMeta{Name: night.Name, Shard: 3, Shards: 3}); err == nil || !strings.Contains(err.Error(), "2 shards") {
			t.Errorf("shard 3/3 of a run of 2: %v", err)
		}

		// The second shard fails, then its retry completes the run.
		failed, err := Begin(ctx, s, RunMeta{Name: night.Name, Shard: 2, Shards: 2, Writer: "runner-2"})
		if err != nil {
			t.Fatal(err)
		}
		if err := failed.Fail(ctx, errors.New("policy x.rego:3: rego_parse_error")); err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(ctx, failed.ID())
		if err != nil || r.ID != first.ID() || r.State != Failed || !strings.Contains(r.Error, "shard 2/2 failed: policy x.rego:3") {
			t.Fatalf("run with a failed shard = %+v, %v", r, err)
		}
		second, _ := recordPart(t, s, dir, RunMeta{Name: night.Name, Shard: 2, Shards: 2}, even)
		runs, err = s.Runs(ctx, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].ID != first.ID() || runs[0].State != Complete || runs[0].Error != "" ||
			runs[0].Hosts != want.Summary.Hosts || runs[0].Findings != len(want.Findings) || runs[0].Shards[1].ID != second.ID() {
			t.Fatalf("runs once both shards are recorded = %+v", runs)
		}
		if id, err := Resolve(ctx, s, "latest"); err != nil || id != first.ID() {
			t.Errorf("latest = %d, %v", id, err)
		}
		for _, ref := range []string{night.Name, fmt.Sprint(second.ID())} {
			if id, err := Resolve(ctx, s, ref); err != nil || id != first.ID() {
				t.Errorf("run %s = %d, %v; want %d", ref, id, err, first.ID())
			}
		}

		got, _, err := LoadResult(ctx, s, second.ID())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Summary, got.Summary); diff != "" {
			t.Errorf("summary (-unsharded +sharded):\n%s", diff)
		}
		if diff := cmp.Diff(want.Findings, got.Findings); diff != "" {
			t.Errorf("findings (-unsharded +sharded):\n%s", diff)
		}
		// First-seen reads a run's finding keys alone: a sharded run's are
		// every shard's, as its findings are.
		wantKeys, err := heldKeys(ctx, whole, wholeRec.ID())
		if err != nil {
			t.Fatal(err)
		}
		gotKeys, err := heldKeys(ctx, s, first.ID())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantKeys, gotKeys); diff != "" || len(gotKeys) == 0 {
			t.Errorf("finding keys (-unsharded +sharded):\n%s", diff)
		}
		hostNames := func(r *audit.Result) map[string]string {
			m := map[string]string{}
			for _, h := range r.Hosts {
				m[h.Host] = h.Fleet
			}
			return m
		}
		if diff := cmp.Diff(hostNames(want), hostNames(got)); diff != "" || len(got.Hosts) != len(want.Hosts) {
			t.Errorf("hosts (-unsharded +sharded):\n%s", diff)
		}
		if diff := cmp.Diff(want.FleetRules, got.FleetRules); diff != "" {
			t.Errorf("fleet rules (-unsharded +sharded):\n%s", diff)
		}
		wc, _ := whole.Counts(ctx, []RunID{wholeRec.ID()})
		gc, _ := s.Counts(ctx, []RunID{first.ID()})
		for i := range wc {
			wc[i].Run = first.ID()
		}
		if diff := cmp.Diff(wc, gc); diff != "" {
			t.Errorf("counts (-unsharded +sharded):\n%s", diff)
		}
		ps, err := s.Trend(ctx, []RunID{first.ID()})
		if err != nil || len(ps) != 1 || ps[0].Checks != 20 || ps[0].Failing != 6 || ps[0].Findings["critical"] != 4 || ps[0].Run != fmt.Sprint(first.ID()) {
			t.Errorf("trend = %+v, %v; want the shards' points summed", ps, err)
		}

		// A second night, its runners recording at once (a store handle
		// each): drift sees every host once, none changed; prune removes
		// the first night whole.
		recs := make(chan *Recorder, 2)
		errs := make(chan error, 2)
		for i, keep := range []func(string) bool{odd, even} {
			go func() {
				h, err := Open(ctx, s.Path(), Options{Version: "test"})
				if err != nil {
					errs <- err
					return
				}
				defer h.Close()
				rec, _, err := recordPartErr(h, dir, RunMeta{Name: "nightly-2026-12-08", Shard: i + 1, Shards: 2}, keep)
				recs <- rec
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		last := <-recs
		d, err := Compute(ctx, s, DriftQuery{From: first.ID(), To: last.ID()})
		if err != nil {
			t.Fatal(err)
		}
		if d.Summary.Hosts != want.Summary.Hosts || d.Summary.Unchanged != want.Summary.Hosts || d.Summary.Added+d.Summary.Removed+d.Summary.New+d.Summary.Resolved != 0 {
			t.Errorf("drift between two sharded nights = %+v", d.Summary)
		}
		for _, id := range []RunID{first.ID(), second.ID()} {
			startedAt(t, s, id, time.Now().Add(-48*time.Hour))
		}
		pr, err := s.Prune(ctx, PruneOptions{Before: time.Now().Add(-24 * time.Hour), Keep: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(pr.Runs) != 1 || pr.Runs[0] != first.ID() {
			t.Errorf("pruned %+v, want the first night", pr)
		}
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Runs != 2 || st.Hosts != want.Summary.Hosts {
			t.Errorf("after pruning the first night: %+v", st)
		}
	})
}

// Runners that split the fleet differently (another shard function, or
// one --shard given twice) never count a host twice: the shard finished
// second, holding hosts a complete shard has, fails naming them, and is
// not counted; its rerun, split as the other, completes the run. Until
// then the run has no hosts or findings, not the shards' recorded so far.
func TestShardsThatOverlap(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		dir := copyFleet(t, nil)
		all := func(string) bool { return true }
		odd := func(h string) bool { return len(h)%2 == 1 }
		even := func(h string) bool { return len(h)%2 == 0 }
		whole := openTest(t, be.new(t))
		wholeRec, _ := recordPart(t, whole, dir, RunMeta{}, all)
		want, _, err := LoadResult(ctx, whole, wholeRec.ID())
		if err != nil {
			t.Fatal(err)
		}

		s := openTest(t, be.new(t))
		night := RunMeta{Name: "nightly", Shard: 1, Shards: 2}
		first, oddRes := recordPart(t, s, dir, night, odd)
		for _, id := range []RunID{first.ID()} {
			if hs, err := s.Hosts(ctx, id); err != nil || len(hs) != 0 {
				t.Errorf("hosts of a run with a shard missing: %d, %v; want none", len(hs), err)
			}
			if fs, err := s.Findings(ctx, id); err != nil || len(fs) != 0 {
				t.Errorf("findings of a run with a shard missing: %d, %v; want none", len(fs), err)
			}
		}
		// Shard 2 audits every host: the odd ones are shard 1's.
		second, _, err := recordPartErr(s, dir, RunMeta{Name: night.Name, Shard: 2, Shards: 2}, all)
		if err == nil || !strings.Contains(err.Error(), "recorded by another shard") {
			t.Fatalf("recording a shard that overlaps another: %v", err)
		}
		r, err := s.Run(ctx, first.ID())
		if err != nil {
			t.Fatal(err)
		}
		if r.State != Failed || r.Hosts != 0 || !strings.Contains(r.Error, "shard 2/2 failed") || !strings.Contains(r.Error, fmt.Sprintf("%d hosts of this shard", oddRes.Summary.Hosts)) {
			t.Errorf("run with overlapping shards = %+v", r)
		}
		if sh, err := s.Run(ctx, second.ID()); err != nil || sh.Shards[1].State != Failed {
			t.Errorf("shard 2 = %+v, %v; want failed", sh, err)
		}
		if cs, err := s.Counts(ctx, []RunID{first.ID()}); err != nil || len(cs) != 0 {
			t.Errorf("counts of a run with overlapping shards = %v, %v", cs, err)
		}
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Hosts != oddRes.Summary.Hosts {
			t.Errorf("%d host rows, want shard 1's %d: the failed shard's are not kept", st.Hosts, oddRes.Summary.Hosts)
		}

		// Rerun as shard 1 split: the run is whole, every host once.
		recordPart(t, s, dir, RunMeta{Name: night.Name, Shard: 2, Shards: 2}, even)
		got, run, err := LoadResult(ctx, s, first.ID())
		if err != nil {
			t.Fatal(err)
		}
		if run.Hosts != want.Summary.Hosts || len(got.Hosts) != len(want.Hosts) || len(got.Findings) != len(want.Findings) {
			t.Errorf("rerun: %d hosts (%d rows), %d findings; want %d, %d", run.Hosts, len(got.Hosts), len(got.Findings), want.Summary.Hosts, len(want.Findings))
		}
	})
}

// A shard that records no hosts (its runner read an empty inventory, or
// its split had none) completes the run, and history says so: its hosts
// are absent, not clean.
func TestShardOfNoHostsIsShown(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		dir := copyFleet(t, nil)
		s := openTest(t, be.new(t))
		recordPart(t, s, dir, RunMeta{Name: "nightly", Shard: 1, Shards: 2}, func(string) bool { return true })
		recordPart(t, s, dir, RunMeta{Name: "nightly", Shard: 2, Shards: 2}, func(string) bool { return false })
		h, err := LoadHistory(ctx, s, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var table bytes.Buffer
		if err := HistoryTable(&table, h, 300); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(table.String(), "shard 2/2 (runner-2) recorded no hosts") {
			t.Errorf("history does not name the shard of no hosts:\n%s", table.String())
		}
	})
}
