package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// crashEnv names the store a writer process records into before it is
// killed; set only in the process TestKilledWriter starts.
const crashEnv = "FLEETAUDIT_STORE_CRASH_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashWriter(path)
		return // not reached: the writer blocks until it is killed
	}
	if path := os.Getenv(holdEnv); path != "" {
		holdingWriter(path)
		return
	}
	os.Exit(postgres.Main(m))
}

// crashWriter records a run into path and, in the middle of FinishRun's
// transaction (hosts written, findings half written), says so on stdout
// and waits to be killed.
func crashWriter(path string) {
	ctx := context.Background()
	s, err := Open(ctx, path, Options{Create: true, Version: "writer"})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	rec, err := Begin(ctx, s, RunMeta{Version: "writer", Writer: fmt.Sprintf("test:%d", os.Getpid())})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	res := &audit.Result{Schema: audit.Schema, Summary: audit.Summary{Hosts: 50, Audited: 50}}
	for i := range 50 {
		host := fmt.Sprintf("gpu-%03d", i)
		doc := map[string]any{"schema": "fleetaudit.snapshot/v1", "host": host, "kernel": map[string]any{"release": fmt.Sprint("6.8.0-", i)}}
		rec.Loaded(fleetrun.HostInput{Origin: host + ".json", Name: host}, doc, nil)
		res.Hosts = append(res.Hosts, fleetrun.HostRun{File: host + ".json", Host: host, Fleet: "gpu-training"})
		for j := range 10 {
			res.Findings = append(res.Findings, policies.Finding{Rule: "hugetlb-cma-on-gpu", Severity: "critical", Host: host, Fleet: "gpu-training",
				Message: fmt.Sprint("finding ", j), Evidence: []policies.Evidence{{Fact: fmt.Sprint("boot.configured.params.p", j), Value: "6G"}}})
		}
	}
	s.afterRow = func(table string, n int) {
		if table == "findings" && n == 250 {
			fmt.Println("mid-write")
			select {} // killed here
		}
	}
	err = rec.Finish(ctx, res, nil)
	fmt.Println("finished:", err) // the test fails if this is reached
	os.Exit(4)
}

// A writer killed with SIGKILL in the middle of recording a run leaves a
// store that opens, passes SQLite's integrity check, keeps every earlier
// run, shows the partial run as incomplete with none of its rows, and takes
// the next run.
func TestKilledWriter(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := be.new(t)
		s := openTest(t, path)
		before, _ := record(t, s, copyFleet(t, nil))
		st0, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()

		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriter$")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "mid-write" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("writer said %q, %v", line, err)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("writer ended with %v, want killed by SIGKILL", err)
		}

		// A reader first: the dead writer's WAL and shared memory are left
		// as they were, and a read-only open recovers from them.
		r, err := Open(ctx, path, Options{ReadOnly: true, Version: "test"})
		if err != nil {
			t.Fatalf("reading the store after a killed writer: %v", err)
		}
		if runs, err := r.Runs(ctx, RunQuery{}); err != nil || len(runs) != 2 || runs[0].State != Incomplete {
			t.Errorf("runs read after a killed writer = %+v, %v", runs, err)
		}
		r.Close()

		s2, err := Open(ctx, path, Options{Version: "test"})
		if err != nil {
			t.Fatalf("the store after a killed writer: %v", err)
		}
		defer s2.Close()
		if msg, err := s2.Check(ctx); err != nil || msg != "" {
			t.Fatalf("integrity check: %q %v", msg, err)
		}
		runs, err := s2.Runs(ctx, RunQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[1].ID != before || runs[1].State != Complete {
			t.Fatalf("runs = %+v", runs)
		}
		partial := runs[0]
		if partial.State != Incomplete || partial.FinishedAt != nil || !strings.HasPrefix(partial.Writer, "test:") {
			t.Errorf("the killed writer's run = %+v, want incomplete, naming its writer", partial)
		}
		hosts, err := s2.Hosts(ctx, partial.ID)
		if err != nil || len(hosts) != 0 {
			t.Errorf("the partial run kept %d host rows (%v): its transaction was not rolled back", len(hosts), err)
		}
		findings, err := s2.Findings(ctx, partial.ID)
		if err != nil || len(findings) != 0 {
			t.Errorf("the partial run kept %d findings (%v)", len(findings), err)
		}
		// Snapshots are stored outside the run's transaction, one committed
		// blob each: the ones written before the kill are whole.
		st, err := s2.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Snapshots != st0.Snapshots+50 || st.Hosts != st0.Hosts || st.Findings != st0.Findings {
			t.Errorf("rows before %+v, after %+v; want 50 more snapshots and nothing else", st0, st)
		}
		// The earlier run is intact, and the store takes the next run: the
		// dead writer's lock went with it.
		if _, _, err := LoadResult(ctx, s2, before); err != nil {
			t.Error(err)
		}
		next, _ := record(t, s2, copyFleet(t, nil))
		if r, err := s2.Run(ctx, next); err != nil || r.State != Complete {
			t.Errorf("the run after the crash: %+v %v", r, err)
		}
	})
}
