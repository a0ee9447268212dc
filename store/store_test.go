package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/reports"
)

const exampleFleet = "../examples/fleet"

func openTest(t *testing.T, path string) *SQLite {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Create: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// copyFleet copies the example fleet's snapshots into a new directory,
// letting edit change each document (nil: drop the host; a string: write
// that text instead).
func copyFleet(t *testing.T, edit func(host string, doc map[string]any) any) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(exampleFleet, "snapshots", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example snapshots: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var out any = doc
		if edit != nil {
			out = edit(doc["host"].(string), doc)
		}
		switch x := out.(type) {
		case nil:
			continue
		case string:
			b = []byte(x)
		default:
			if b, err = json.Marshal(x); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// exampleHosts counts the example fleet's hosts, in all and by the fleet
// its inventory gives them: the snapshot files and the hosts collected from
// roots, every one listed in the inventory.
func exampleHosts(t *testing.T) (int, map[string]int) {
	t.Helper()
	inv, err := inventory.Load(filepath.Join(exampleFleet, "inventory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	byFleet := map[string]int{}
	for _, h := range inv.Hosts {
		listed[h.Name] = true
		byFleet[h.Fleet]++
	}
	files, err := filepath.Glob(filepath.Join(exampleFleet, "snapshots", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example snapshots: %v", err)
	}
	for _, f := range files {
		if host := strings.TrimSuffix(filepath.Base(f), ".json"); !listed[host] {
			t.Fatalf("example snapshot %s is not in the inventory: the counts below would miss it", f)
		}
	}
	return len(inv.Hosts), byFleet
}

// record audits the snapshots in dir with the example inventory, recording
// the run as the CLI does.
func record(t *testing.T, s Store, dir string) (RunID, *Recorder) {
	t.Helper()
	rec, err := recordErr(s, dir)
	if err != nil {
		t.Fatal(err)
	}
	return rec.ID(), rec
}

func recordErr(s Store, dir string) (*Recorder, error) {
	ctx := context.Background()
	set, err := fleets.Load(true)
	if err != nil {
		return nil, err
	}
	inv, err := inventory.Load(filepath.Join(exampleFleet, "inventory.yaml"))
	if err != nil {
		return nil, err
	}
	rec, err := Begin(ctx, s, RunMeta{Version: "test", Writer: "test"})
	if err != nil {
		return nil, err
	}
	res, err := audit.Run(ctx, audit.Options{Fleets: set, Inventory: inv, Snapshots: []string{dir}, Loaded: rec.Loaded})
	if err != nil {
		return nil, err
	}
	trend := []reports.TrendPoint{{Fleet: "gpu-training", Checks: 10, Failing: 3, Findings: map[string]int{"critical": 2}}}
	return rec, rec.Finish(ctx, res, trend)
}

// Two audits recording into one store at once (two handles, as two
// processes would have) both complete; the snapshots they share are
// stored once.
func TestConcurrentWriters(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := be.new(t)
		a, a2 := openTest(t, path), openTest(t, path)
		dir := copyFleet(t, nil)
		errs := make(chan error, 2)
		for _, s := range []*SQLite{a, a2} {
			go func() {
				_, err := recordErr(s, dir)
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		runs, err := a.Runs(ctx, RunQuery{State: Complete})
		if err != nil || len(runs) != 2 {
			t.Fatalf("complete runs = %+v, %v", runs, err)
		}
		st, err := a2.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := exampleHosts(t); st.Snapshots != n || st.Hosts != 2*n {
			t.Errorf("rows = %+v, want %d snapshots for %d host rows", st, n, 2*n)
		}
	})
}

func TestUnchangedSnapshotsAreStoredOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		first := copyFleet(t, nil)
		id1, rec1 := record(t, s, first)
		added, reused := rec1.Stored()
		// The snapshot files and the inventory hosts collected from roots.
		n, _ := exampleHosts(t)
		if added != n || reused != 0 {
			t.Fatalf("first run stored %d new snapshots, reused %d; want %d and 0", added, reused, n)
		}
		st1, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}

		// The next night: every host collected again (new collected_at), one
		// host's facts changed.
		second := copyFleet(t, func(host string, doc map[string]any) any {
			doc["collected_at"] = "2026-12-01T02:00:00Z"
			if host == "gpu-a-002" {
				doc["sysctl"].(map[string]any)["running"].(map[string]any)["kernel.numa_balancing"] = "0"
			}
			return doc
		})
		id2, rec2 := record(t, s, second)
		added, reused = rec2.Stored()
		if added != 1 || reused != n-1 {
			t.Fatalf("second run stored %d new snapshots, reused %d; want 1 (gpu-a-002) and %d", added, reused, n-1)
		}
		st2, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st2.Snapshots != st1.Snapshots+1 {
			t.Errorf("snapshot rows %d → %d, want one more", st1.Snapshots, st2.Snapshots)
		}
		if catalogs := st2.Blobs - st2.Snapshots - st2.FindingBlobs; catalogs != 1 {
			t.Errorf("%d catalog blobs, want the one both runs share", catalogs)
		}
		// Findings still open word for word are shared too: the second run
		// adds its rows, and a blob only for what changed (gpu-a-002's new
		// fleet-wide skew finding).
		if st2.Findings != 2*st1.Findings || st2.FindingBlobs != st1.FindingBlobs+1 {
			t.Errorf("finding rows %d → %d, blobs %d → %d", st1.Findings, st2.Findings, st1.FindingBlobs, st2.FindingBlobs)
		}

		// The hosts of both runs point at the same blob, and each run keeps
		// its own collected_at.
		h1, err := s.Hosts(ctx, id1)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := s.Hosts(ctx, id2)
		if err != nil {
			t.Fatal(err)
		}
		if len(h1) != n || len(h2) != n {
			t.Fatalf("hosts per run: %d and %d, want %d", len(h1), len(h2), n)
		}
		byName := func(hs []Host) map[string]Host {
			m := map[string]Host{}
			for _, h := range hs {
				m[h.Host] = h
			}
			return m
		}
		a, b := byName(h1)["web-01"], byName(h2)["web-01"]
		if a.Snapshot == "" || a.Snapshot != b.Snapshot {
			t.Errorf("web-01 snapshots %q and %q, want the same blob", a.Snapshot, b.Snapshot)
		}
		if a.CollectedAt == b.CollectedAt || b.CollectedAt != "2026-12-01T02:00:00Z" {
			t.Errorf("collected_at %q and %q, want each run's own", a.CollectedAt, b.CollectedAt)
		}
		if byName(h1)["gpu-a-002"].Snapshot == byName(h2)["gpu-a-002"].Snapshot {
			t.Error("gpu-a-002 changed but kept its blob")
		}
		// The stored blob is the document the rules saw, collected_at aside.
		body, err := s.Blob(ctx, a.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(body), "collected_at") || !strings.Contains(string(body), `"host":"web-01"`) {
			t.Errorf("blob of web-01: %.200s", body)
		}
		// Stored compressed, addressed by what it decodes to.
		var enc string
		var stored []byte
		if err := s.db.QueryRowContext(ctx, `SELECT encoding, body FROM blobs WHERE hash = ?`, a.Snapshot).Scan(&enc, &stored); err != nil {
			t.Fatal(err)
		}
		if enc != "gzip" || len(stored) >= len(body) || contentHash(body) != a.Snapshot {
			t.Errorf("web-01's blob: encoding %q, %d bytes stored for %d", enc, len(stored), len(body))
		}
		// A blob this fleetaudit cannot decode is an error naming it.
		if _, err := s.db.ExecContext(ctx, `UPDATE blobs SET encoding = 'zstd' WHERE hash = ?`, a.Snapshot); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Blob(ctx, a.Snapshot); err == nil || !strings.Contains(err.Error(), `unknown encoding "zstd"`) || !strings.Contains(err.Error(), a.Snapshot) {
			t.Errorf("an unknown encoding: %v", err)
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE blobs SET encoding = 'gzip' WHERE hash = ?`, a.Snapshot); err != nil {
			t.Fatal(err)
		}

		// The run reads back as the audit it recorded.
		res, run, err := LoadResult(ctx, s, id2)
		if err != nil {
			t.Fatal(err)
		}
		if run.State != Complete || run.Hosts != n || res.Summary.Hosts != n || len(res.Findings) != run.Findings || run.Findings == 0 {
			t.Errorf("run %+v, result summary %+v, %d findings", run, res.Summary, len(res.Findings))
		}
		if len(res.Rules) == 0 || len(res.FleetRules["gpu-training"]) == 0 || len(res.Hosts) != n {
			t.Errorf("catalog: %d rules, gpu-training runs %v; %d hosts", len(res.Rules), res.FleetRules["gpu-training"], len(res.Hosts))
		}
		trend, err := s.Trend(ctx, []RunID{id1, id2})
		if err != nil {
			t.Fatal(err)
		}
		if len(trend) != 2 || trend[0].Run != strconv.FormatInt(int64(id1), 10) || trend[1].Findings["critical"] != 2 {
			t.Errorf("trend = %+v", trend)
		}
	})
}

func TestHistoryCounts(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		id1, _ := record(t, s, copyFleet(t, nil))
		begun, err := s.BeginRun(ctx, RunMeta{Version: "test", Writer: "host:42"})
		if err != nil {
			t.Fatal(err)
		}
		h, err := LoadHistory(ctx, s, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Runs) != 2 || h.Runs[0].ID != begun || h.Runs[0].State != Incomplete || h.Runs[1].ID != id1 {
			t.Fatalf("runs = %+v", h.Runs)
		}
		if len(h.Runs[0].Fleets) != 0 {
			t.Errorf("incomplete run has counts: %+v", h.Runs[0].Fleets)
		}
		var gpu *FleetCounts
		total := 0
		for i, f := range h.Runs[1].Fleets {
			total += f.Findings
			if f.Fleet == "gpu-training" {
				gpu = &h.Runs[1].Fleets[i]
			}
		}
		_, byFleet := exampleHosts(t)
		if gpu == nil || gpu.Hosts != byFleet["gpu-training"] || gpu.BySeverity["critical"] == 0 {
			t.Fatalf("gpu-training counts = %+v", gpu)
		}
		if total != h.Runs[1].Findings {
			t.Errorf("fleet counts add up to %d, the run has %d findings", total, h.Runs[1].Findings)
		}
		if id, err := Resolve(ctx, s, "latest"); err != nil || id != id1 {
			t.Errorf("latest = %d, %v; want the complete run %d", id, err, id1)
		}
		if _, err := Resolve(ctx, s, "latest~1"); !errors.Is(err, ErrNoRun) {
			t.Errorf("latest~1 of one complete run: %v", err)
		}
		if _, _, err := LoadResult(ctx, s, begun); !errors.Is(err, ErrNotComplete) {
			t.Errorf("reading an incomplete run: %v", err)
		}
	})
}

func TestNewerSchemaIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := be.new(t)
		s := openTest(t, path)
		if _, err := s.BeginRun(ctx, RunMeta{Version: "test"}); err != nil {
			t.Fatal(err)
		}
		// What a fleetaudit with a later schema leaves behind.
		next := SchemaVersion() + 1
		if _, err := s.db.ExecContext(ctx, `INSERT INTO fleetaudit_schema (version, applied_at, fleetaudit) VALUES (?, ?, ?)`, next, formatTime(timeNow()), "v9.9.9"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.ExecContext(ctx, `CREATE TABLE from_the_future (x TEXT)`); err != nil {
			t.Fatal(err)
		}
		s.Close()

		_, err := Open(ctx, path, Options{Create: true, Version: "test"})
		if !errors.Is(err, ErrNewerSchema) {
			t.Fatalf("opening a newer store: %v", err)
		}
		for _, want := range []string{path, "newer fleetaudit", "v9.9.9", "upgrade"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		// Refused, not touched: the newer version is still the store's.
		db := rawDB(t, path)
		var top int
		if err := db.QueryRow(`SELECT MAX(version) FROM fleetaudit_schema`).Scan(&top); err != nil || top != next {
			t.Errorf("schema version after refusal = %d, %v", top, err)
		}
	})
}

func TestOpenRefusesWhatIsNotAStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Open(ctx, filepath.Join(dir, "missing.db"), Options{}); !errors.Is(err, ErrNoStore) {
		t.Errorf("missing file without Create: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("a reader created the store")
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, text, Options{Create: true}); !errors.Is(err, ErrNotStore) {
		t.Errorf("a text file: %v", err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE accounts (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(ctx, other, Options{Create: true}); !errors.Is(err, ErrNotStore) || !strings.Contains(err.Error(), other) {
		t.Errorf("another application's database: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, fifo, Options{Create: true}); !errors.Is(err, ErrNotStore) {
		t.Errorf("a FIFO: %v", err)
	}
}

func TestMigrationsAreRecorded(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := be.new(t)
		s := openTest(t, path)
		var n, top int
		var by string
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), MAX(version), MIN(fleetaudit) FROM fleetaudit_schema`).Scan(&n, &top, &by); err != nil {
			t.Fatal(err)
		}
		if n != SchemaVersion() || top != SchemaVersion() || by != "test" {
			t.Errorf("schema rows %d, version %d, by %q", n, top, by)
		}
		s.Close()
		// Opening again applies nothing.
		s2 := openTest(t, path)
		if err := s2.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM fleetaudit_schema`).Scan(&n); err != nil || n != SchemaVersion() {
			t.Errorf("after reopening: %d schema rows, %v", n, err)
		}
		if msg, err := s2.Check(ctx); err != nil || msg != "" {
			t.Errorf("integrity: %q %v", msg, err)
		}
	})
}

func TestFailedRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		rec, err := Begin(ctx, s, RunMeta{Version: "test", StartedAt: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Fail(ctx, errors.New("policy x.rego:3: rego_parse_error")); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Runs(ctx, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].State != Failed || !strings.Contains(runs[0].Error, "x.rego:3") || runs[0].FinishedAt == nil {
			t.Errorf("runs = %+v", runs)
		}
		if !runs[0].StartedAt.Equal(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)) {
			t.Errorf("started_at = %s", runs[0].StartedAt)
		}
		if got, err := s.Runs(ctx, RunQuery{State: Complete}); err != nil || len(got) != 0 {
			t.Errorf("complete runs = %v, %v", got, err)
		}
	})
}
