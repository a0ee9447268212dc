package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/pgtest"
	"github.com/fleetaudit/fleetaudit/sshsource"
	"github.com/fleetaudit/fleetaudit/store"
)

// postgres is this test binary's PostgreSQL server (stopped by TestMain).
var postgres pgtest.Server

// Two runners each audit their shard of the example fleet and record it
// into one named run in PostgreSQL: until the second has, history names
// the missing shard and counts nothing, and report and drift leave the run
// out saying so; then history has one row for the run with every host,
// drift compares it whole with the next night, and the HTML report covers
// every host.
func TestShardedRunIntoPostgres(t *testing.T) {
	url := postgres.DB(t)
	env := map[string]string{"HOME": t.TempDir(), "FLEETAUDIT_HISTORY_STORE": url}
	inv := filepath.Join(exampleFleetDir, "inventory.yaml")
	night := func(name, numa string, shards ...string) {
		t.Helper()
		dir := nightlyFleet(t, numa)
		for _, sh := range shards {
			r := runCLI(t, env, "audit", "--inventory", inv, "--snapshots", dir, "--shard", sh, "--record", "--run", name,
				"--store", url, "--format", "json", "-o", filepath.Join(t.TempDir(), "out.json"))
			if r.code != exitFindings || !strings.Contains(r.stderr, "msg=recorded") {
				t.Fatalf("audit --shard %s: exit %d\n%s", sh, r.code, r.stderr)
			}
		}
	}
	// The first night: a plain run, so that report and drift have one.
	r := runCLI(t, env, "audit", "--inventory", inv, "--snapshots", nightlyFleet(t, "1"), "--record", "--store", url, "--format", "json", "-o", filepath.Join(t.TempDir(), "out.json"))
	if r.code != exitFindings {
		t.Fatalf("audit --record: exit %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, env, "history", "--format", "json")
	var h store.History
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || r.code != exitOK || len(h.Runs) != 1 {
		t.Fatalf("history json: %v (exit %d)\n%s%s", err, r.code, r.stdout, r.stderr)
	}
	total := h.Runs[0].Hosts

	night("nightly-2026-12-07", "0", "1/2")
	r = runCLI(t, env, "history", "--format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || r.code != exitOK {
		t.Fatalf("history json: %v (exit %d)\n%s%s", err, r.code, r.stdout, r.stderr)
	}
	if len(h.Runs) != 2 || h.Runs[0].Name != "nightly-2026-12-07" || h.Runs[0].State != store.Incomplete || len(h.Runs[0].Fleets) != 0 ||
		len(h.Runs[0].Shards) != 2 || h.Runs[0].Shards[1].State != store.Missing {
		t.Fatalf("history with shard 2/2 missing = %+v", h.Runs)
	}
	r = runCLI(t, env, "history")
	if !strings.Contains(r.stdout, "shard 2/2 missing") {
		t.Errorf("history does not name the missing shard:\n%s", r.stdout)
	}
	out := filepath.Join(t.TempDir(), "compliance.html")
	r = runCLI(t, env, "report", "--store", url, "--format", "html", "-o", out)
	if r.code != exitOK || !strings.Contains(r.stderr, "nightly-2026-12-07") || !strings.Contains(r.stderr, "shard 2/2 missing") {
		t.Errorf("report with a shard missing: exit %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, env, "drift", "--store", url, "--to", "nightly-2026-12-07")
	if r.code != exitError || !strings.Contains(r.stderr, "shard 2/2 missing") {
		t.Errorf("drift to a run with a shard missing: exit %d\n%s", r.code, r.stderr)
	}

	night("nightly-2026-12-07", "0", "2/2")
	r = runCLI(t, env, "history", "--format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || r.code != exitOK {
		t.Fatalf("history json: %v (exit %d)\n%s%s", err, r.code, r.stdout, r.stderr)
	}
	if len(h.Runs) != 2 || h.Runs[0].State != store.Complete || h.Runs[0].Hosts != total || h.Runs[1].Hosts != total {
		t.Fatalf("history once both shards are recorded = %+v", h.Runs)
	}
	hosts := 0
	for _, f := range h.Runs[0].Fleets {
		hosts += f.Hosts
	}
	if hosts != total {
		t.Errorf("the sharded run's fleets count %d hosts, want %d", hosts, total)
	}
	// Each shard has hosts: the split is real.
	for _, sh := range h.Runs[0].Shards {
		if sh.State != store.Complete || sh.Hosts == 0 || sh.Hosts == total {
			t.Errorf("shard %+v", sh)
		}
	}

	// drift from the plain night to the sharded one: every host, the
	// NUMA change on the GPU hosts.
	r = runCLI(t, env, "drift", "--store", url, "--format", "json")
	var d store.Drift
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != exitOK {
		t.Fatalf("drift json: %v (exit %d)\n%s%s", err, r.code, r.stdout, r.stderr)
	}
	if d.Summary.Hosts != total || d.Summary.Added+d.Summary.Removed != 0 || d.Summary.Resolved != 8 || d.To.Name != "nightly-2026-12-07" {
		t.Errorf("drift to the sharded run = %+v", d.Summary)
	}
	r = runCLI(t, env, "drift", "--store", url)
	if r.code != exitOK || !strings.Contains(r.stdout, "nightly-2026-12-07 (") {
		t.Errorf("the drift table does not name the sharded run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, env, "report", "--store", url, "--format", "html", "-o", out)
	if r.code != exitOK || strings.Contains(r.stderr, "left out") {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gpu-training", "web-serving", "over 2 recorded runs"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
}

// The shards split the hosts: each in exactly one.
func TestShardSplitsEveryHostOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			sh := sshsource.Shard{Index: i, Count: n}
			for _, h := range []string{"gpu-a-001", "gpu-a-002", "web-01", "db-01", "x"} {
				if sh.Has(h) {
					seen[h]++
				}
			}
		}
		for h, c := range seen {
			if c != 1 {
				t.Errorf("%d shards: %s in %d", n, h, c)
			}
		}
	}
}

func TestShardRecordUsage(t *testing.T) {
	snaps := filepath.Join(exampleFleetDir, "snapshots")
	env := map[string]string{"HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--snapshots", snaps, "--shard", "1/2", "--record"}, "--shard with --record needs --run NAME"},
		{[]string{"audit", "--snapshots", snaps, "--run", "x"}, "add --record, or drop --run"},
		{[]string{"audit", "--snapshots", snaps, "--shard", "3/2", "--record", "--run", "x"}, "--shard"},
		{[]string{"audit", "--root", gpuRoot, "--shard", "1/2", "--record", "--run", "x"}, "--root hosts are not split"},
	} {
		r := runCLI(t, env, tc.args...)
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.args, r.code, tc.want, r.stderr)
		}
	}
}

// A store URL with a password is refused without showing it, from the
// flag as from the environment; the password comes from PGPASSWORD.
func TestStoreURLPasswordIsRefusedUnshown(t *testing.T) {
	const secret = "hunter2-Secret"
	url := "postgres://audit:" + secret + "@db.example.com/history"
	snaps := filepath.Join(exampleFleetDir, "snapshots")
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{map[string]string{"HOME": t.TempDir()}, []string{"audit", "--snapshots", snaps, "--record", "--store", url, "-o", filepath.Join(t.TempDir(), "out")}},
		{map[string]string{"HOME": t.TempDir(), "FLEETAUDIT_HISTORY_STORE": url}, []string{"history"}},
		{map[string]string{"HOME": t.TempDir()}, []string{"report", "--store", url + "?sslmode=disable", "-o", filepath.Join(t.TempDir(), "r.html")}},
	} {
		r := runCLI(t, tc.env, tc.args...)
		if r.code != exitError || !strings.Contains(r.stderr, "PGPASSWORD") || strings.Contains(r.stderr+r.stdout, secret) {
			t.Errorf("%v: exit %d, want 2 refusing the password unshown:\n%s%s", tc.args, r.code, r.stdout, r.stderr)
		}
	}
}
