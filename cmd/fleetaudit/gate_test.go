package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/gittest"
)

const exampleConfigRepo = "../../examples/config-repo"

// exampleRepo copies the example config repo into a new git repository with
// one commit, dated so its hash is stable, and returns its directory and
// that commit.
func exampleRepo(t testing.TB) (dir, base string) {
	t.Helper()
	gittest.Require(t)
	dir = t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(exampleConfigRepo)); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "example config repo")
	return dir, gitIn(t, dir, "rev-parse", "HEAD")
}

func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=fleetaudit", "-c", "user.email=ci@fleetaudit.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-11-30T12:00:00Z", "GIT_COMMITTER_DATE=2026-11-30T12:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// plantHugetlbCMA is the incident: a boot flag for the web servers added to
// the layer every fleet shares.
func plantHugetlbCMA(t testing.TB, dir string) {
	t.Helper()
	p := filepath.Join(dir, "layers/base/etc/default/grub.d/60-hugetlb.cfg")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "# Reserve CMA for 1G hugepages on the web servers.\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=6G\"\n"
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGateStopsTheIncidentChange(t *testing.T) {
	dir, base := exampleRepo(t)
	clean := runCLI(t, nil, "gate", "--repo", dir, "--base", base)
	if clean.code != exitOK || !strings.Contains(clean.stdout, "0 introduced") {
		t.Fatalf("unchanged repo: exit %d\n%s%s", clean.code, clean.stdout, clean.stderr)
	}
	plantHugetlbCMA(t, dir)
	for _, tc := range []struct {
		failOn string
		want   int
	}{{"high", exitFindings}, {"critical", exitFindings}, {"none", exitOK}} {
		r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--fail-on", tc.failOn)
		if r.code != tc.want {
			t.Errorf("--fail-on %s: exit %d, want %d\n%s", tc.failOn, r.code, tc.want, r.stderr)
		}
	}
	r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--format", "json", "--fail-on", "none")
	var doc struct {
		Schema string `json:"schema"`
		Fleets []struct {
			Fleet      string `json:"fleet"`
			Hosts      *int   `json:"hosts"`
			Introduced []struct {
				Rule     string `json:"rule"`
				Severity string `json:"severity"`
				Evidence []struct {
					Source string `json:"source"`
				} `json:"evidence"`
			} `json:"introduced"`
		} `json:"fleets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	got := map[string][]string{}
	hosts := map[string]int{}
	for _, f := range doc.Fleets {
		hosts[f.Fleet] = *f.Hosts
		for _, x := range f.Introduced {
			got[f.Fleet] = append(got[f.Fleet], x.Rule+":"+x.Severity)
		}
	}
	if diff := cmp.Diff(map[string][]string{"gpu-training": {"hugetlb-cma-on-gpu:critical"}}, got); diff != "" {
		t.Errorf("introduced (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"gpu-training": 128, "web-serving": 40}, hosts); diff != "" {
		t.Errorf("hosts from the repo's inventory (-want +got):\n%s", diff)
	}
	if doc.Schema != "fleetaudit.gate/v1" {
		t.Errorf("schema %q", doc.Schema)
	}
}

func TestGateUsageErrors(t *testing.T) {
	dir, _ := exampleRepo(t)
	for name, args := range map[string][]string{
		"no base":     {"gate", "--repo", dir},
		"bad format":  {"gate", "--repo", dir, "--base", "HEAD", "--format", "sarif-ish"},
		"bad fail-on": {"gate", "--repo", dir, "--base", "HEAD", "--fail-on", "urgent"},
		"unknown ref": {"gate", "--repo", dir, "--base", "no-such-ref"},
		"no repo":     {"gate", "--repo", filepath.Join(dir, "missing"), "--base", "HEAD"},
		"not git":     {"gate", "--repo", t.TempDir(), "--base", "HEAD"},
	} {
		r := runCLI(t, nil, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "fleetaudit: ") {
			t.Errorf("%s: exit %d, stderr %q", name, r.code, r.stderr)
		}
	}
}

// TestGateReportGolden pins the three gate formats on the incident change.
func TestGateReportGolden(t *testing.T) {
	dir, base := exampleRepo(t)
	plantHugetlbCMA(t, dir)
	for _, format := range []string{"table", "json", "markdown"} {
		t.Run(format, func(t *testing.T) {
			r := runCLI(t, map[string]string{"COLUMNS": "80"}, "gate", "--repo", dir, "--base", base, "--format", format, "--fail-on", "none")
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			got := strings.ReplaceAll(r.stdout, base, "<base>")
			got = strings.ReplaceAll(got, base[:12], "<base>")
			checkGolden(t, "gate-example."+format, got)
		})
	}
}
