package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// exampleFleet generates the snapshots of the fleet that runs
// examples/config-repo (examples/config-repo/fleet/generate.go) into a new
// directory.
func exampleFleet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "examples/config-repo/fleet/generate.go", dir)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generating the example fleet: %v\n%s", err, out)
	}
	return dir
}

// recordFleet records the snapshots of dir as one audit run of a new store.
func recordFleet(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	r := runCLI(t, nil, "audit", "--snapshots", dir, "--record", "--store", path, "--fail-on", "none", "-o", filepath.Join(t.TempDir(), "audit.txt"))
	if r.code != exitOK {
		t.Fatalf("audit --record: exit %d\n%s", r.code, r.stderr)
	}
	return path
}

// TestGatePlanGolden pins every gate format with a per-host plan, on the
// incident change against the recorded example fleet. The plan, written
// from the hugetlb rule's documented condition: critical on the hosts with
// RDMA devices and driver 535.104.05 (no FOLL_LONGTERM pin before
// 535.171.04), gpu-a-[001-004] and gpu-l-001; high on gpu-b-[001-002]
// (550.90.07 has it) and gpu-c-001 (no RDMA devices); the web servers are
// unchanged (their profile has no such rule).
func TestGatePlanGolden(t *testing.T) {
	path := recordFleet(t, exampleFleet(t))
	dir, base := exampleRepo(t)
	plantHugetlbCMA(t, dir)
	for _, format := range []string{"table", "json", "markdown", "sarif"} {
		t.Run(format, func(t *testing.T) {
			r := runCLI(t, map[string]string{"COLUMNS": "100"}, "gate", "--repo", dir, "--base", base, "--store="+path, "--format", format)
			if r.code != exitFindings {
				t.Fatalf("exit %d, want %d (the change is stopped)\n%s", r.code, exitFindings, r.stderr)
			}
			got := strings.ReplaceAll(r.stdout, base, "<base>")
			got = strings.ReplaceAll(got, base[:12], "<base>")
			got = strings.ReplaceAll(got, path, "<store>")
			got = regexp.MustCompile(`"version": "[^"]*"`).ReplaceAllString(got, `"version": "<version>"`)
			checkGolden(t, "gate-plan-example."+format, got)
		})
	}
	r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--store="+path, "--format", "json")
	var res struct {
		Plan struct {
			Summary struct {
				Planned, NewlyFailing, Unchanged, NotPlanned int
				NewlyFailingBy                               []struct {
					Fleet, Severity string
					Hosts           int
				} `json:"newly_failing_by"`
			} `json:"summary"`
			Fleets []struct {
				Fleet        string
				NewlyFailing []struct {
					Hosts    []string
					Severity string
				} `json:"newly_failing"`
				Unchanged []struct{ Hosts []string }
			} `json:"fleets"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Plan.Fleets {
		for _, g := range f.NewlyFailing {
			got = append(got, f.Fleet+" "+g.Severity+" "+strings.Join(g.Hosts, ","))
		}
		for _, g := range f.Unchanged {
			got = append(got, f.Fleet+" unchanged "+strings.Join(g.Hosts, ","))
		}
	}
	want := []string{
		"gpu-training critical gpu-a-[001-004],gpu-l-001",
		"gpu-training high gpu-b-[001-002]",
		"gpu-training high gpu-c-001",
		"web-serving unchanged web-[01-02]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

// TestGatePlanFromSnapshotDir: --snapshots reads a directory of snapshot
// files; a snapshot older than --max-age, a file that is no snapshot and a
// host of a fleet the repo does not render are listed as not planned, with
// why, and never counted as unchanged.
func TestGatePlanFromSnapshotDir(t *testing.T) {
	snaps := exampleFleet(t)
	dir, base := exampleRepo(t)
	plantHugetlbCMA(t, dir)
	// gpu-b-002 was last read three days ago.
	p := filepath.Join(snaps, "gpu-b-002.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-72 * time.Hour).UTC().Format(time.RFC3339)
	b = regexp.MustCompile(`"collected_at": "[^"]*"`).ReplaceAll(b, []byte(`"collected_at": "`+old+`"`))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// db-01: no fleet profile takes its name, so no repo fleet renders its
	// files.
	w, err := os.ReadFile(filepath.Join(snaps, "web-02.json"))
	if err != nil {
		t.Fatal(err)
	}
	w = []byte(strings.Replace(string(w), `"host": "web-02"`, `"host": "db-01"`, 1))
	os.WriteFile(filepath.Join(snaps, "db-01.json"), w, 0o644)
	os.WriteFile(filepath.Join(snaps, "broken.json"), []byte("{not json"), 0o644)

	r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--snapshots", snaps, "--format", "json")
	if r.code != exitFindings {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var res struct {
		Plan struct {
			NotPlanned []struct{ Host, Reason, Detail string } `json:"not_planned"`
			Summary    struct {
				Hosts      int `json:"hosts"`
				Planned    int `json:"planned"`
				NotPlanned int `json:"not_planned"`
			} `json:"summary"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range res.Plan.NotPlanned {
		got = append(got, n.Host+" "+n.Reason)
		if n.Detail == "" {
			t.Errorf("%s not planned without why", n.Host)
		}
	}
	want := []string{"db-01 no-fleet", "gpu-b-002 stale", " unread"}
	if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
		t.Errorf("not planned (-want +got):\n%s\n%s", diff, r.stdout[:min(len(r.stdout), 2000)])
	}
	if s := res.Plan.Summary; s.Hosts != 12 || s.Planned != 9 || s.NotPlanned != 3 {
		t.Errorf("summary %+v, want 12 hosts, 9 planned, 3 not planned", s)
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestGatePlanUsage: --store and --snapshots together, and a max-age that
// is no age, are usage errors.
func TestGatePlanUsage(t *testing.T) {
	dir, base := exampleRepo(t)
	for _, args := range [][]string{
		{"--store=" + filepath.Join(t.TempDir(), "s.db"), "--snapshots", t.TempDir()},
		{"--snapshots", t.TempDir(), "--max-age", "-1h"},
		{"--snapshots", filepath.Join(t.TempDir(), "missing")},
		{"--store", filepath.Join(t.TempDir(), "s.db")},
	} {
		r := runCLI(t, nil, append([]string{"gate", "--repo", dir, "--base", base}, args...)...)
		if r.code != exitError {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, exitError, r.stderr)
		}
		if args[0] == "--store" && !strings.Contains(r.stderr, "--store=") {
			t.Errorf("--store PATH: %s, want the --store=PATH hint", r.stderr)
		}
	}
}

// TestGatePlanFixed: reverting the incident plans the GPU hosts as fixed,
// and SARIF reports what they lose as baselineState "absent".
func TestGatePlanFixed(t *testing.T) {
	path := recordFleet(t, exampleFleet(t))
	dir, clean := exampleRepo(t)
	plantHugetlbCMA(t, dir)
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "hugetlb_cma for the web servers")
	incident := gitIn(t, dir, "rev-parse", "HEAD")
	r := runCLI(t, nil, "gate", "--repo", dir, "--base", incident, "--head", clean, "--store="+path, "--format", "json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var res struct {
		Plan struct {
			Summary struct {
				Fixed        int `json:"fixed"`
				NewlyFailing int `json:"newly_failing"`
			} `json:"summary"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Plan.Summary.Fixed != 8 || res.Plan.Summary.NewlyFailing != 0 {
		t.Errorf("summary %+v, want the 8 GPU hosts fixed", res.Plan.Summary)
	}
	r = runCLI(t, nil, "gate", "--repo", dir, "--base", incident, "--head", clean, "--store="+path, "--format", "sarif")
	if n := strings.Count(r.stdout, `"baselineState": "absent"`); n != 3 {
		t.Errorf("%d results absent, want 3 (one per group of fixed hosts)\n%.2000s", n, r.stdout)
	}
}

// TestGatePlanWaivers: a waiver at base covering the hugetlb finding on
// gpu-b-* marks it on those hosts only; the gate still stops the change
// for the rest, and the waived hosts count under "waived", not high.
func TestGatePlanWaivers(t *testing.T) {
	path := recordFleet(t, exampleFleet(t))
	dir, _ := exampleRepo(t)
	waiver := "waivers:\n  - rule: hugetlb-cma-on-gpu\n    hosts: [\"gpu-b-*\"]\n    owner: gpu-team@example.com\n    justification: INFRA-77 the R550 nodes pin with FOLL_LONGTERM.\n    expires: 2099-01-01\n"
	if err := os.WriteFile(filepath.Join(dir, "waivers.yaml"), []byte(waiver), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "waive the R550 nodes")
	base := gitIn(t, dir, "rev-parse", "HEAD")
	plantHugetlbCMA(t, dir)
	r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--store="+path, "--format", "json")
	if r.code != exitFindings {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var res struct {
		Plan struct {
			Summary struct {
				NewlyFailingBy []struct {
					Fleet, Severity string
					Hosts           int
				} `json:"newly_failing_by"`
			} `json:"summary"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range res.Plan.Summary.NewlyFailingBy {
		got = append(got, x.Severity+" "+string(rune('0'+x.Hosts)))
	}
	if diff := cmp.Diff([]string{"critical 5", "high 1", "waived 2"}, got); diff != "" {
		t.Errorf("newly failing by severity (-want +got):\n%s", diff)
	}
}
