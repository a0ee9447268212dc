package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/fleetaudit/fleetaudit/store"
)

// holdWriteLock begins a write transaction on the store, as an audit
// recording its run does, and holds it until the test ends.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.ExecContext(ctx, `ROLLBACK`)
		conn.Close()
		db.Close()
	})
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO runs (started_at, state, fleetaudit, writer) VALUES ('2026-12-06T00:00:00.000000000Z', 'incomplete', 'test', 'test:1')`); err != nil {
		t.Fatal(err)
	}
}

// While another process holds the store's write lock, history, drift and
// report answer at once from the last committed runs; a writer (audit
// --record, history prune) gives up after --store-wait, saying that
// another process is writing to that store.
func TestReadersBesideAWriter(t *testing.T) {
	env, path := recordedStore(t)
	holdWriteLock(t, path)

	start := time.Now()
	r := runCLI(t, env, "history", "--format", "json")
	if r.code != exitOK || !strings.Contains(r.stdout, `"id": 2`) || strings.Contains(r.stdout, `"id": 3`) {
		t.Errorf("history beside a writer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "drift"); r.code != exitOK || !strings.Contains(r.stdout, "Drift from run 1") {
		t.Errorf("drift beside a writer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "report", "--format", "markdown"); r.code != exitOK || !strings.Contains(r.stdout, "gpu-training") {
		t.Errorf("report beside a writer: exit %d\n%s", r.code, r.stderr)
	}
	// Generous: a reader that waited for the writer would wait a minute.
	if took := time.Since(start); took > store.DefaultWait/2 {
		t.Errorf("reading beside a writer took %s", took)
	}

	for _, args := range [][]string{
		{"audit", "--record", "--store-wait", "300ms", "--snapshots", filepath.Join(exampleFleetDir, "snapshots"), "-o", filepath.Join(t.TempDir(), "out.txt")},
		{"history", "prune", "--store-wait", "300ms", "--older-than", "0d"},
	} {
		r := runCLI(t, env, args...)
		if r.code != exitError {
			t.Errorf("%v beside a writer: exit %d, want %d\n%s", args[:2], r.code, exitError, r.stderr)
		}
		for _, want := range []string{path, "another process is writing to the store", "300ms", "--store-wait"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v beside a writer does not say %q:\n%s", args[:2], want, r.stderr)
			}
		}
	}
}

// The readers never create a store, and say there is none.
func TestReadersOfAMissingStore(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "sub", "nope.db")
	for _, args := range [][]string{{"history"}, {"drift"}, {"report"}, {"history", "prune", "--older-than", "1d"}} {
		r := runCLI(t, nil, append(args, "--store", missing)...)
		if r.code != exitError || !strings.Contains(r.stderr, "no store here") || !strings.Contains(r.stderr, missing) {
			t.Errorf("%v of a missing store: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Error("a reader created the store's directory")
	}
}

// -o naming the store is refused before anything runs, also when the store
// does not exist yet (audit --record would create it and then write the
// report over it) and when the two names differ: relative, through a
// linked directory, or a dangling link the store would be created through;
// and -o naming SQLite's files beside the store.
func TestOutputNamingTheStoreIsRefused(t *testing.T) {
	dir := t.TempDir()
	snaps := filepath.Join(exampleFleetDir, "snapshots")
	abs, err := filepath.Abs(snaps)
	if err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "linked")
	if err := os.Symlink(dir, linked); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "target.db"), filepath.Join(dir, "dangling.db")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		name, store, out string
	}{
		{"same name", filepath.Join(dir, "x.db"), filepath.Join(dir, "x.db")},
		{"relative", filepath.Join(dir, "x.db"), "x.db"},
		{"dotted", "x.db", "./sub/../x.db"},
		{"through a linked directory", filepath.Join(dir, "x.db"), filepath.Join(linked, "x.db")},
		{"in a directory to be made", filepath.Join(dir, "new", "x.db"), filepath.Join(linked, "new", "x.db")},
		{"through a dangling link", "dangling.db", "target.db"},
		{"its WAL", "x.db", "x.db-wal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, nil, "audit", "--record", "--store", tc.store, "--snapshots", abs, "--fail-on", "none", "-o", tc.out)
			if r.code != exitError || !strings.Contains(r.stderr, "refusing to overwrite an input") {
				t.Errorf("exit %d, want %d refusing to overwrite the store:\n%s", r.code, exitError, r.stderr)
			}
			for _, f := range []string{"x.db", "target.db", "new"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s was made", f)
				}
			}
		})
	}
	// Beside the store is fine.
	if r := runCLI(t, nil, "audit", "--record", "--store", "x.db", "--snapshots", abs, "--fail-on", "none", "-o", "x.txt"); r.code != exitOK {
		t.Errorf("a report beside the store: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "history", "--store", "x.db"); r.code != exitOK || !strings.Contains(r.stdout, "complete") {
		t.Errorf("the store beside the report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The store history, drift and report open (openStoreToRead) takes no
// write: a run cannot be begun on it.
func TestReadersOpenTheStoreReadOnly(t *testing.T) {
	_, path := recordedStore(t)
	a := &app{getenv: func(string) string { return "" }, v: viper.New()}
	a.v.Set("store", path)
	a.v.Set("store-wait", store.DefaultWait)
	s, err := a.openStoreToRead(context.Background(), "-")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.BeginRun(context.Background(), store.RunMeta{Version: "test"}); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("beginning a run on the readers' store: %v, want a read-only refusal", err)
	}
}
