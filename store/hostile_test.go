package store

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/reports"
)

// hostileStrings are what a hostile or broken host may report: invalid
// UTF-8, NUL bytes, and a string that looks like the store's own escaping.
var hostileStrings = []string{
	"gpu\xff\xfe-01",
	"node\x00evil",
	"\x01\"quoted\"",
	"ok-\xc3\x28\x00\x01-mixed",
}

// Host names, fleets, rules, messages, errors and fact values holding
// bytes PostgreSQL's TEXT refuses are recorded on both backends, and read
// back the same: those kept in columns exactly, those kept in JSON as
// encoding/json makes them (invalid UTF-8 as U+FFFD), on both alike.
func TestHostileStringsRoundTrip(t *testing.T) {
	got := map[string]any{}
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		bad := hostileStrings
		// A fact value, in a snapshot blob.
		doc := map[string]any{"host": bad[0], "facts": map[string]any{"kernel": map[string]any{"cmdline": bad[1] + bad[0]}}}
		body, _, err := SnapshotBlob(doc)
		if err != nil {
			t.Fatal(err)
		}
		snap, _, err := s.PutBlob(ctx, KindSnapshot, body)
		if err != nil {
			t.Fatalf("storing a snapshot with hostile values: %v", err)
		}
		id, err := s.BeginRun(ctx, RunMeta{Version: "test", Writer: bad[0], Command: "fleetaudit audit " + bad[1], Name: bad[2]})
		if err != nil {
			t.Fatalf("beginning a run with hostile meta: %v", err)
		}
		var hosts []Host
		var finds []Finding
		for i, b := range bad {
			hosts = append(hosts, Host{HostRun: fleetrun.HostRun{File: "snap/" + b, Host: b, Fleet: bad[(i+1)%len(bad)], Unread: "read " + b}, Snapshot: snap, CollectedAt: b})
			finds = append(finds, Finding{Finding: policies.Finding{Rule: "rule." + b, Severity: "high", Host: b, Fleet: bad[(i+1)%len(bad)], Message: "message " + b}, Key: MatchKey(policies.Finding{Host: b}, nil)})
		}
		res := &audit.Result{}
		res.Summary.Hosts = len(hosts)
		err = s.FinishRun(ctx, id, &Record{Result: res,
			Hosts:    slices.Values(ptrs(hosts)),
			Findings: slices.Values(ptrs(finds)),
			Trend:    []reports.TrendPoint{{Fleet: bad[3], Checks: 1, Failing: 1}}})
		if err != nil {
			t.Fatalf("recording a run with hostile strings: %v", err)
		}
		failID, err := s.BeginRun(ctx, RunMeta{Version: "test", Writer: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FailRun(ctx, failID, "collecting "+bad[0]+": "+bad[1]); err != nil {
			t.Fatalf("failing a run with a hostile error: %v", err)
		}

		run, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Writer != bad[0] || run.Command != "fleetaudit audit "+bad[1] || run.Name != bad[2] || run.State != Complete {
			t.Errorf("run = %q %q %q %s", run.Writer, run.Command, run.Name, run.State)
		}
		failed, err := s.Run(ctx, failID)
		if err != nil {
			t.Fatal(err)
		}
		if want := "collecting " + bad[0] + ": " + bad[1]; failed.Error != want {
			t.Errorf("error = %q, want %q", failed.Error, want)
		}
		counts, err := s.Counts(ctx, []RunID{id})
		if err != nil {
			t.Fatal(err)
		}
		var fleets []string
		for _, c := range counts {
			fleets = append(fleets, c.Fleet)
		}
		if want := slices.Sorted(slices.Values(bad)); !slices.Equal(slices.Sorted(slices.Values(fleets)), want) {
			t.Errorf("count fleets = %q, want %q", fleets, want)
		}
		trend, err := s.Trend(ctx, []RunID{id})
		if err != nil {
			t.Fatal(err)
		}
		if len(trend) != 1 || trend[0].Fleet != bad[3] {
			t.Errorf("trend = %+v", trend)
		}
		gotHosts, err := s.Hosts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		gotFinds, err := s.Findings(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(gotHosts) != len(bad) || len(gotFinds) != len(bad) {
			t.Fatalf("%d hosts, %d findings; want %d each", len(gotHosts), len(gotFinds), len(bad))
		}
		for i, h := range gotHosts {
			if h.CollectedAt != bad[i] {
				t.Errorf("collected_at = %q, want %q", h.CollectedAt, bad[i])
			}
			if want := viaJSON(t, bad[i]); h.Host != want || h.Unread != "read "+want {
				t.Errorf("host = %q, unread %q; want %q", h.Host, h.Unread, want)
			}
		}
		for i, f := range gotFinds {
			if want := viaJSON(t, bad[i]); f.Host != want || f.Message != "message "+want {
				t.Errorf("finding %d: host %q, message %q; want %q", i, f.Host, f.Message, want)
			}
			if f.Key != finds[i].Key {
				t.Errorf("finding %d: key %q, want %q", i, f.Key, finds[i].Key)
			}
		}
		blob, err := s.Blob(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(blob, &back); err != nil {
			t.Fatal(err)
		}
		trend[0].At = time.Time{} // the run's start: now
		got[be.name] = []any{run.Writer, run.Command, run.Name, failed.Error, counts, trend, gotHosts, gotFinds, back}
	})
	if len(got) == len(backends) {
		if d := cmp.Diff(got["sqlite"], got["postgres"]); d != "" {
			t.Errorf("the backends read back different things (-sqlite +postgres):\n%s", d)
		}
	}
}

// viaJSON is s as encoding/json keeps it.
func viaJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func ptrs[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

// A run's trend points come in fleet order by bytes on both backends,
// whatever the PostgreSQL database's collation (here ICU's en-US, which
// orders "gpu_b" before "GPU-c" before "gpu-a" otherwise).
func TestTrendOrderIsTheDatabases(t *testing.T) {
	ctx := context.Background()
	where := map[string]string{"sqlite": backends[0].new(t)}
	base := postgres.DB(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	name := "icu_" + strings.ToLower(strings.TrimPrefix(u.Path, "/"))
	if _, err := rawDB(t, base).ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`); err != nil {
		t.Fatalf("a database collating as en-US: %v", err)
	}
	u.Path = "/" + name
	where["postgres"] = u.String()
	fleets := []string{"gpu-a", "GPU-c", "gpu_b", "web"}
	want := slices.Sorted(slices.Values(fleets))
	for _, be := range []string{"sqlite", "postgres"} {
		s := openTest(t, where[be])
		id, err := s.BeginRun(ctx, RunMeta{Version: "test", Writer: "w"})
		if err != nil {
			t.Fatal(err)
		}
		var trend []reports.TrendPoint
		for _, f := range fleets {
			trend = append(trend, reports.TrendPoint{Fleet: f, Checks: 1})
		}
		if err := s.FinishRun(ctx, id, &Record{Result: &audit.Result{}, Trend: trend}); err != nil {
			t.Fatal(err)
		}
		ps, err := s.Trend(ctx, []RunID{id})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Fleet)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: trend fleets %q, want %q", be, got, want)
		}
	}
}
