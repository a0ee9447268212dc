package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// holdEnv names the store a writer process records into, holding its
// transaction open until its stdin closes; set only in the process
// startHoldingWriter starts.
const holdEnv = "FLEETAUDIT_STORE_HOLDING_WRITER"

// holdingWriter records a run into path and, inside FinishRun's
// transaction (the write lock held), says "holding" on stdout and waits for
// its stdin to close; then it commits and says "committed".
func holdingWriter(path string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	s, err := Open(ctx, path, Options{Version: "writer"})
	if err != nil {
		fail(err)
	}
	rec, err := Begin(ctx, s, RunMeta{Version: "writer", Writer: fmt.Sprintf("test:%d", os.Getpid())})
	if err != nil {
		fail(err)
	}
	res := &audit.Result{Schema: audit.Schema, Summary: audit.Summary{Hosts: 1, Audited: 1}}
	res.Hosts = []fleetrun.HostRun{{File: "gpu-held.json", Host: "gpu-held", Fleet: "gpu-training"}}
	s.afterRow = func(table string, n int) {
		if table == "run_hosts" && n == 1 {
			fmt.Println("holding")
			_, _ = io.Copy(io.Discard, os.Stdin)
		}
	}
	if err := rec.Finish(ctx, res, nil); err != nil {
		fail(err)
	}
	fmt.Println("committed")
	os.Exit(0)
}

// startHoldingWriter starts a writer process that holds the store's write
// lock (inside FinishRun's transaction); release lets it commit and waits
// for it.
func startHoldingWriter(t *testing.T, path string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "holding" {
		t.Fatalf("writer said %q, %v", line, err)
	}
	return func() {
		t.Helper()
		stdin.Close()
		if line, err := out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "committed" {
			t.Fatalf("writer said %q, %v", line, err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
}

// While another process holds the store's write lock, a reader opens the
// store and reads every kind of answer at once from the last committed
// state; a second writer waits its (short) wait and fails saying another
// process holds the lock; once the first commits, readers see its run.
func TestReadersAreNotBlockedByAWriter(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := be.new(t)
		s := openTest(t, path)
		first, _ := record(t, s, copyFleet(t, nil))
		second, _ := record(t, s, copyFleet(t, nil))
		s.Close()

		release := startHoldingWriter(t, path)

		start := time.Now()
		r, err := Open(ctx, path, Options{ReadOnly: true, Version: "test"})
		if err != nil {
			t.Fatalf("opening to read beside a writer: %v", err)
		}
		defer r.Close()
		runs, err := r.Runs(ctx, RunQuery{})
		if err != nil {
			t.Fatalf("listing runs beside a writer: %v", err)
		}
		// The writer's run is begun (committed incomplete), not finished.
		if len(runs) != 3 || runs[0].State != Incomplete || runs[1].ID != second {
			t.Fatalf("runs beside a writer = %+v", runs)
		}
		if _, err := LoadHistory(ctx, r, RunQuery{}); err != nil {
			t.Errorf("history beside a writer: %v", err)
		}
		if _, err := Compute(ctx, r, DriftQuery{From: first, To: second}); err != nil {
			t.Errorf("drift beside a writer: %v", err)
		}
		if _, _, err := LoadResult(ctx, r, second); err != nil {
			t.Errorf("a run's result beside a writer: %v", err)
		}
		// Generous: a reader that waited for the writer would wait DefaultWait.
		if took := time.Since(start); took > DefaultWait/4 {
			t.Errorf("reading beside a writer took %s", took)
		}
		if _, err := r.BeginRun(ctx, RunMeta{Version: "test"}); err == nil {
			t.Error("a read-only store began a run")
		}

		w, err := Open(ctx, path, Options{Version: "test", Wait: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("a second writer opening: %v", err)
		}
		defer w.Close()
		_, err = w.BeginRun(ctx, RunMeta{Version: "test"})
		if be.postgres() {
			// PostgreSQL begins runs side by side; finishing one waits
			// for the other writer's transaction.
			if err != nil {
				t.Fatalf("a second writer beginning beside a writer: %v", err)
			}
			_, err = recordErr(w, copyFleet(t, nil))
		}
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("a second writer beside a writer: %v, want ErrLocked", err)
		}
		for _, want := range []string{path, "another process is writing", "200ms"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}

		release()
		runs, err = r.Runs(ctx, RunQuery{State: Complete})
		if err != nil || len(runs) != 3 {
			t.Errorf("complete runs after the writer committed = %+v, %v", runs, err)
		}
		if _, err := w.BeginRun(ctx, RunMeta{Version: "test"}); err != nil {
			t.Errorf("a second writer once the first is done: %v", err)
		}
	})
}

// A new store is in WAL mode (what lets readers read beside a writer), and
// a read-only open never writes: not a missing store, not a run.
func TestStoreIsWALAndReadersReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	s := openTest(t, path)
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	s.Close()
	// WAL is the file's own: bytes 18 and 19 of the header are 2.
	head := make([]byte, 20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if head[18] != 2 || head[19] != 2 {
		t.Errorf("header read/write versions %d/%d, want 2/2 (WAL)", head[18], head[19])
	}

	r, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.BeginRun(ctx, RunMeta{Version: "test"}); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("beginning a run on a read-only store: %v", err)
	}
	missing := filepath.Join(dir, "sub", "missing.db")
	if _, err := Open(ctx, missing, Options{ReadOnly: true}); !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), missing) {
		t.Errorf("reading a missing store: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Error("a reader created the store's directory")
	}
	if _, err := Open(ctx, missing, Options{ReadOnly: true, Create: true}); err == nil {
		t.Error("a read-only open that may create")
	}
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Error("a read-only open that may create made the store's directory")
	}
}

// A read-only open of a path SQLite would read as URI syntax ('%', spaces)
// opens that file.
func TestReadOnlyOpenOfAnOddPath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "my store %41 x.db")
	s := openTest(t, path)
	id, _ := record(t, s, copyFleet(t, nil))
	s.Close()
	r, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Run(ctx, id); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "my store A x.db")); err == nil {
		t.Error("the read-only open decoded %41 and made another file")
	}
}
