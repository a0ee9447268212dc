package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/store"
)

const exampleFleetDir = "../../examples/fleet"

// nightlyFleet copies the example fleet's snapshots, setting every GPU
// host's kernel.numa_balancing (one host alone would be a new skew).
func nightlyFleet(t *testing.T, numaBalancing string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(exampleFleetDir, "snapshots", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example snapshots: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(filepath.Base(f), "gpu-") {
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			doc["sysctl"].(map[string]any)["running"].(map[string]any)["kernel.numa_balancing"] = numaBalancing
			if b, err = json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// recordedStore records two nights of the example fleet into the default
// store under a temporary $XDG_DATA_HOME: NUMA balancing is turned off on
// the GPU hosts on the second.
func recordedStore(t *testing.T) (env map[string]string, storePath string) {
	t.Helper()
	data := t.TempDir()
	env = map[string]string{"XDG_DATA_HOME": data, "HOME": t.TempDir()}
	inv := filepath.Join(exampleFleetDir, "inventory.yaml")
	for _, numa := range []string{"1", "0"} {
		r := runCLI(t, env, "audit", "--record", "--inventory", inv, "--snapshots", nightlyFleet(t, numa), "--format", "json", "-o", filepath.Join(t.TempDir(), "out.json"))
		if r.code != exitFindings {
			t.Fatalf("audit --record: exit %d\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "msg=recorded") {
			t.Errorf("audit --record does not log the run it recorded:\n%s", r.stderr)
		}
	}
	return env, filepath.Join(data, "fleetaudit", "store.db")
}

func TestRecordHistoryDriftReport(t *testing.T) {
	env, path := recordedStore(t)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the default store: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v, want 0600: it holds every host's snapshot", info.Mode().Perm())
	}

	// history: both runs, per fleet and severity.
	r := runCLI(t, env, "history")
	if r.code != exitOK {
		t.Fatalf("history: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"RUN", "CRITICAL", "WAIVED", "gpu-training", "web-serving", "complete"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("history table lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, env, "history", "--format", "json")
	var h store.History
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || r.code != exitOK {
		t.Fatalf("history json: %v (exit %d)\n%s", err, r.code, r.stdout)
	}
	if h.Schema != store.HistorySchema || len(h.Runs) != 2 || h.Runs[0].ID != 2 || h.Runs[0].State != store.Complete {
		t.Fatalf("history = %+v", h)
	}
	// Turning NUMA balancing off resolved a low finding on each of the 8
	// GPU hosts with a snapshot; gpu-b-007, collected from its root,
	// still has it on and now differs from its fleet (a new low finding).
	counts := func(run store.RunHistory) map[string]int {
		for _, f := range run.Fleets {
			if f.Fleet == "gpu-training" {
				return f.BySeverity
			}
		}
		return nil
	}
	if before, after := counts(h.Runs[1]), counts(h.Runs[0]); before == nil || after == nil || before["low"] != after["low"]+7 || before["high"] != after["high"] {
		t.Errorf("gpu-training counts %v → %v, want 7 low findings fewer", before, after)
	}

	// drift: the default compares the latest run with the one before.
	r = runCLI(t, env, "drift")
	if r.code != exitOK {
		t.Fatalf("drift: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"Drift from run 1", "to run 2", "gpu-a-002 (gpu-training): changed", "sysctl.running.kernel.numa_balancing", "/proc/sys/kernel/numa_balancing", "resolved", "numa-balancing-enabled", "still open:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("drift table lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "web-01") {
		t.Errorf("drift lists an unchanged host:\n%s", r.stdout)
	}
	r = runCLI(t, env, "drift", "--from", "1", "--to", "latest", "--host", "gpu-a-00[2-3]", "--format", "json")
	var d store.Drift
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != exitOK {
		t.Fatalf("drift json: %v (exit %d)\n%s%s", err, r.code, r.stdout, r.stderr)
	}
	if d.Schema != store.DriftSchema || d.Summary.Hosts != 2 || len(d.Hosts) != 2 || d.Hosts[0].Host != "gpu-a-002" || d.Hosts[1].Host != "gpu-a-003" {
		t.Fatalf("drift = %+v", d.Summary)
	}
	fc := d.Hosts[0].Facts
	if len(fc) != 1 || fc[0].Fact != "sysctl.running.kernel.numa_balancing" || fc[0].Before != "1" || fc[0].After != "0" || fc[0].AfterSource != "/proc/sys/kernel/numa_balancing" {
		t.Errorf("facts = %+v", fc)
	}
	if len(d.Hosts[0].Resolved) != 1 || d.Hosts[0].Resolved[0].Rule != "numa-balancing-enabled" || len(d.Hosts[0].New) != 0 {
		t.Errorf("findings resolved %v, new %v", d.Hosts[0].Resolved, d.Hosts[0].New)
	}
	// Backwards: the finding is new.
	r = runCLI(t, env, "drift", "--from", "latest", "--to", "1", "--fleet", "gpu-training", "--format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || len(d.Hosts) != 9 || len(d.Hosts[0].New) != 1 || d.Summary.New != 8 || d.Summary.Resolved != 1 {
		t.Errorf("drift backwards: %v %+v", err, d.Summary)
	}
	r = runCLI(t, env, "drift", "--fleet", "web-serving")
	if r.code != exitOK || !strings.Contains(r.stdout, "4 hosts, 0 changed,") {
		t.Errorf("drift of web-serving: exit %d\n%s", r.code, r.stdout)
	}

	// report: the HTML compliance report over the store, with the trend.
	out := filepath.Join(t.TempDir(), "compliance.html")
	r = runCLI(t, env, "report", "--format", "html", "--since", "30d", "-o", out)
	if r.code != exitOK {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<html", "gpu-training", "numa-balancing-enabled", "over 2 recorded runs"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	r = runCLI(t, env, "report", "--format", "markdown", "--run", "1")
	if r.code != exitOK || !strings.Contains(r.stdout, "gpu-training") {
		t.Errorf("markdown report of run 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestHistoryShowsIncompleteRuns(t *testing.T) {
	env, path := recordedStore(t)
	ctx := context.Background()
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A writer that began a run and never finished it.
	id, err := s.BeginRun(ctx, store.RunMeta{Version: "test", Writer: "node-7:4242"})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, env, "history")
	if r.code != exitOK || !strings.Contains(r.stdout, "incomplete") || !strings.Contains(r.stdout, "node-7:4242 stopped before it finished") {
		t.Errorf("history with an incomplete run: exit %d\n%s", r.code, r.stdout)
	}
	// drift and report skip it by default, and refuse it by name.
	if r := runCLI(t, env, "drift"); r.code != exitOK || !strings.Contains(r.stdout, "Drift from run 1") {
		t.Errorf("drift past an incomplete run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, env, "drift", "--to", strconv.FormatInt(int64(id), 10))
	if r.code != exitError || !strings.Contains(r.stderr, "incomplete") {
		t.Errorf("drift to an incomplete run: exit %d\n%s", r.code, r.stderr)
	}
}

func TestHistoryErrors(t *testing.T) {
	env, path := recordedStore(t)
	missing := filepath.Join(t.TempDir(), "nope.db")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing store", []string{"history", "--store", missing}, "no store here"},
		{"bad since", []string{"history", "--since", "yesterday"}, `--since "yesterday"`},
		{"bad format", []string{"history", "--format", "yaml"}, `--format "yaml": want table or json`},
		{"unknown run", []string{"drift", "--from", "99"}, "run 99: no such run"},
		{"bad run ref", []string{"drift", "--to", "newest"}, "want a run id, latest or latest~N"},
		{"report format", []string{"report", "--format", "sarif"}, "want html or markdown"},
		{"output over the store", []string{"report", "-o", path}, "refusing to overwrite an input"},
		{"record over the store", []string{"audit", "--record", "--snapshots", filepath.Join(exampleFleetDir, "snapshots"), "-o", path}, "refusing to overwrite an input"},
		{"store without record", []string{"audit", "--store", missing, "--snapshots", filepath.Join(exampleFleetDir, "snapshots")}, "add --record, or drop --store"},
		{"bad host glob", []string{"drift", "--host", "gpu-[", "--from", "1"}, "syntax error in pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, env, tc.args...)
			if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s", r.code, tc.want, r.stderr)
			}
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("history created the store it was pointed at")
	}
}

func TestNewerStoreIsRefused(t *testing.T) {
	env, path := recordedStore(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO fleetaudit_schema (version, applied_at, fleetaudit) VALUES (?, '2027-01-01T00:00:00.000000000Z', 'v3.0.0')`, store.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, args := range [][]string{{"history"}, {"drift"}, {"audit", "--record", "--snapshots", filepath.Join(exampleFleetDir, "snapshots")}} {
		r := runCLI(t, env, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "written by a newer fleetaudit") || !strings.Contains(r.stderr, "v3.0.0") {
			t.Errorf("%v on a newer store: exit %d\n%s", args, r.code, r.stderr)
		}
	}
}
