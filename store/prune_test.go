package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
)

func startedAt(t *testing.T, s *SQLite, id RunID, at time.Time) {
	t.Helper()
	if _, err := s.db.Exec(`UPDATE runs SET started_at = ? WHERE id = ?`, formatTime(at), int64(id)); err != nil {
		t.Fatal(err)
	}
}

// unreferencedBlobs counts blobs no run needs, and checks the foreign keys.
func unreferencedBlobs(t *testing.T, s *SQLite) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM blobs WHERE hash NOT IN (SELECT snapshot FROM run_hosts WHERE snapshot IS NOT NULL)
		AND hash NOT IN (SELECT finding FROM findings) AND hash NOT IN (SELECT catalog FROM runs WHERE catalog IS NOT NULL)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if s.d.name != sqliteDialect.name {
		return n // PostgreSQL checks every foreign key as it writes
	}
	rows, err := s.db.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Error("foreign_key_check reports a dangling reference")
	}
	return n
}

func TestPruneRemovesOldRunsAndTheirBlobsOnly(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		now := time.Now().UTC()
		day := 24 * time.Hour

		oldest, _ := record(t, s, copyFleet(t, nil))
		changed := copyFleet(t, func(host string, doc map[string]any) any {
			if host == "gpu-a-001" {
				doc["kernel"] = map[string]any{"release": "6.8.0-99-generic"}
			}
			return doc
		})
		older, _ := record(t, s, changed)
		newest, _ := record(t, s, changed)
		dead, err := s.BeginRun(ctx, RunMeta{Version: "test", Writer: "killed"})
		if err != nil {
			t.Fatal(err)
		}
		startedAt(t, s, oldest, now.Add(-100*day))
		startedAt(t, s, older, now.Add(-50*day))
		startedAt(t, s, dead, now.Add(-40*day))
		startedAt(t, s, newest, now.Add(-45*day)) // older than the cutoff, kept by Keep

		before, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		opts := PruneOptions{Before: now.Add(-30 * day), Keep: 1, LiveFor: day, DryRun: true}
		dry, err := s.Prune(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := s.Stats(ctx); after != before {
			t.Errorf("a dry run changed the store: %+v -> %+v", before, after)
		}
		opts.DryRun = false
		res, err := s.Prune(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := []RunID{oldest, older, dead}
		if !slices.Equal(res.Runs, want) || !slices.Equal(dry.Runs, want) {
			t.Errorf("removed %v (dry %v), want %v", res.Runs, dry.Runs, want)
		}
		if res.Blobs == 0 || res.Blobs != dry.Blobs || res.BlobBytes != dry.BlobBytes || res.BlobsKeptFor != "" {
			t.Errorf("blobs: %+v, dry %+v: want the old gpu-a-001 snapshot and the old findings counted alike", res, dry)
		}
		after, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.Runs != 1 || after.Blobs != before.Blobs-res.Blobs || after.Hosts >= before.Hosts {
			t.Errorf("stats %+v -> %+v after removing %d blobs", before, after, res.Blobs)
		}
		if n := unreferencedBlobs(t, s); n != 0 {
			t.Errorf("%d unreferenced blobs left", n)
		}
		if msg, err := s.Check(ctx); err != nil || msg != "" {
			t.Errorf("integrity check: %q %v", msg, err)
		}
		// The kept run reads back whole: every blob it cites is still there.
		got, _, err := LoadResult(ctx, s, newest)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Findings) == 0 {
			t.Error("the kept run lost its findings")
		}
		if _, err := s.Run(ctx, oldest); err == nil {
			t.Error("the oldest run is still there")
		}
	})
}

// A run still being written keeps its place, and keeps every blob: its
// writer stores snapshots before its rows reference them.
func TestPruneSparesALiveWriter(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		done, _ := record(t, s, copyFleet(t, nil))

		set, err := fleets.Load(true)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := inventory.Load(filepath.Join(exampleFleet, "inventory.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := Begin(ctx, s, RunMeta{Version: "test", Writer: "live"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := audit.Run(ctx, audit.Options{Fleets: set, Inventory: inv, Snapshots: []string{copyFleet(t, nil)}, Loaded: rec.Loaded})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := s.Prune(ctx, PruneOptions{Before: time.Now().Add(time.Hour), LiveFor: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(pr.Runs, []RunID{done}) || pr.BlobsKeptFor == "" || pr.Blobs != 0 {
			t.Errorf("prune with a live writer: %+v", pr)
		}
		if err := rec.Finish(ctx, res, nil); err != nil {
			t.Fatalf("the live run could not finish after a prune: %v", err)
		}
		if _, _, err := LoadResult(ctx, s, rec.ID()); err != nil {
			t.Fatal(err)
		}
		// With the writer done, the removed run's blobs that no one cites go.
		pr, err = s.Prune(ctx, PruneOptions{Before: time.Now().Add(-time.Hour), LiveFor: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(pr.Runs) != 0 || pr.BlobsKeptFor != "" {
			t.Errorf("second prune: %+v", pr)
		}
		if n := unreferencedBlobs(t, s); n != 0 {
			t.Errorf("%d unreferenced blobs left", n)
		}
	})
}

func TestPruneRefusesNegativeKeep(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		s := openTest(t, be.new(t))
		if _, err := s.Prune(context.Background(), PruneOptions{Keep: -1}); err == nil {
			t.Error("keep -1 accepted")
		}
	})
}

// A store written at schema version 1 gains the blob-reference indexes
// and the shard columns when opened, and keeps its runs.
func TestMigrationFromVersion1(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := be.new(t)
		s := openTest(t, path)
		id, _ := record(t, s, copyFleet(t, nil))
		for _, stmt := range []string{
			`DROP INDEX runs_shard`, `ALTER TABLE runs DROP COLUMN name`, `ALTER TABLE runs DROP COLUMN shard`, `ALTER TABLE runs DROP COLUMN shards`,
			`DROP INDEX run_hosts_snapshot`, `DROP INDEX findings_blob`, `DROP INDEX runs_catalog`,
			`DELETE FROM fleetaudit_schema WHERE version > 1`,
		} {
			if _, err := s.db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		// A reader migrates an older store once (a writing open), then reads.
		r, err := Open(ctx, path, Options{ReadOnly: true, Version: "test"})
		if err != nil {
			t.Fatalf("reading a version-1 store: %v", err)
		}
		if _, _, err := LoadResult(ctx, r, id); err != nil {
			t.Errorf("the version-1 run read: %v", err)
		}
		r.Close()
		s2 := openTest(t, path)
		var n int
		indexes := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN ('run_hosts_snapshot', 'findings_blob', 'runs_catalog')`
		if be.postgres() {
			indexes = `SELECT COUNT(*) FROM pg_indexes WHERE indexname IN ('run_hosts_snapshot', 'findings_blob', 'runs_catalog')`
		}
		if err := s2.db.QueryRowContext(ctx, indexes).Scan(&n); err != nil || n != 3 {
			t.Errorf("%d of 3 indexes after migrating (%v)", n, err)
		}
		if _, _, err := LoadResult(ctx, s2, id); err != nil {
			t.Errorf("the version-1 run after migrating: %v", err)
		}
	})
}
