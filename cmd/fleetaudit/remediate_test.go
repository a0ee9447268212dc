package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cmaExampleRepo is the example config repo with the incident committed:
// hugetlb_cma=6G in the base layer both fleets share.
func cmaExampleRepo(t *testing.T) (dir, base string) {
	t.Helper()
	dir, _ = exampleRepo(t)
	plantHugetlbCMA(t, dir)
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "hugetlb_cma for the web servers")
	return dir, gitIn(t, dir, "rev-parse", "HEAD")
}

func TestRemediateDryRunGolden(t *testing.T) {
	dir, base := cmaExampleRepo(t)
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			r := runCLI(t, nil, "remediate", "--repo", dir, "--dry-run", "--format", format)
			// thp-always cannot be fixed in the repo (its fact comes from the
			// baseline): refused, exit 1.
			if r.code != exitFindings {
				t.Fatalf("exit %d, want %d\n%s", r.code, exitFindings, r.stderr)
			}
			got := strings.ReplaceAll(r.stdout, base, "<base>")
			got = strings.ReplaceAll(got, base[:12], "<base>")
			checkGolden(t, "remediate-example."+format, got)
			if out := gitIn(t, dir, "status", "--porcelain", "-uall"); out != "" {
				t.Errorf("the dry run wrote to the repo: %q", out)
			}
		})
	}
}

// The JSON's proposal diff applies to the repo with git apply.
func TestRemediateDiffApplies(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	r := runCLI(t, nil, "remediate", "--repo", dir, "--dry-run", "--format", "json", "--rule", "hugetlb-cma-on-gpu", "--fleet", "gpu-training")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Proposals []struct {
			Rule, Fleet, Diff string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Proposals) != 1 || doc.Proposals[0].Fleet != "gpu-training" {
		t.Fatalf("proposals: %+v", doc.Proposals)
	}
	patch := filepath.Join(t.TempDir(), "fix.patch")
	if err := os.WriteFile(patch, []byte(doc.Proposals[0].Diff), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "apply", "--check", patch)
	gitIn(t, dir, "apply", patch)
	g := runCLI(t, nil, "gate", "--repo", dir, "--base", "HEAD", "--format", "json")
	if g.code != exitOK {
		t.Fatalf("gate after apply: exit %d\n%s\n%s", g.code, g.stdout, g.stderr)
	}
	if !strings.Contains(g.stdout, `"resolved": 1`) || !strings.Contains(g.stdout, `"introduced": 0`) {
		t.Errorf("gate after apply:\n%s", g.stdout)
	}
}

func TestRemediateFindingsGroupsHosts(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	cma := `"fix": {"kind": "boot-param", "set": {"hugetlb_cma": "0"}}`
	audit := `{"schema": "fleetaudit.findings/v1", "findings": [
  {"rule": "hugetlb-cma-on-gpu", "severity": "critical", "host": "gpu-a-002", "fleet": "gpu-training", "message": "hugetlb_cma=6G", ` + cma + `},
  {"rule": "hugetlb-cma-on-gpu", "severity": "critical", "host": "gpu-a-001", "fleet": "gpu-training", "message": "hugetlb_cma=6G", ` + cma + `},
  {"rule": "hugetlb-cma-on-gpu", "severity": "critical", "host": "gpu-b-007", "fleet": "gpu-training", "message": "hugetlb_cma=2G on the running kernel command line"},
  {"rule": "hugetlb-cma-on-gpu", "severity": "critical", "host": "inf-01", "fleet": "inference", "message": "hugetlb_cma=6G", ` + cma + `},
  {"rule": "tcp-tw-recycle", "severity": "high", "host": "web-01", "fleet": "web-serving", "message": "tw_recycle"}
]}`
	file := filepath.Join(t.TempDir(), "audit.json")
	if err := os.WriteFile(file, []byte(audit), 0o644); err != nil {
		t.Fatal(err)
	}
	// Wide enough that no line wraps.
	r := runCLI(t, map[string]string{"COLUMNS": "400"}, "remediate", "--repo", dir, "--dry-run", "--findings", file, "--fleet", "gpu-training")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"== hugetlb-cma-on-gpu in fleet gpu-training: proven\n",
		"hosts (2): gpu-a-001, gpu-a-002\n",
		"skipped:\n  hugetlb-cma-on-gpu in fleet gpu-training (1 host: gpu-b-007): no fix: the rule attaches no config change (its remediation is for people)\n\n",
		"1 fix proven, 0 refused, 1 skipped\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, nil, "remediate", "--repo", dir, "--dry-run", "--findings", file, "--format", "json")
	var doc struct {
		Skipped []struct{ Rule, Fleet, Reason string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	var skipped []string
	for _, s := range doc.Skipped {
		skipped = append(skipped, s.Rule+"/"+s.Fleet+": "+s.Reason)
	}
	want := []string{
		"hugetlb-cma-on-gpu/gpu-training: no fix: the rule attaches no config change (its remediation is for people)",
		"hugetlb-cma-on-gpu/inference: fleet inference is not in the repo's fleetaudit.yaml (fleets: gpu-training, web-serving)",
		"tcp-tw-recycle/web-serving: no fix: the rule attaches no config change (its remediation is for people)",
	}
	if diff := cmp.Diff(want, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestRemediateUsageErrors(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"nothing to do", nil, []string{"--repo", dir}, "say what to do: --dry-run"},
		{"both", nil, []string{"--repo", dir, "--dry-run", "--github", "a/b"}, "choose one"},
		{"bad github", map[string]string{"GITHUB_TOKEN": "t0ken"}, []string{"--repo", dir, "--github", "acme"}, "want OWNER/REPO"},
		{"no token", nil, []string{"--repo", dir, "--github", "acme/cfg"}, "GITHUB_TOKEN"},
		{"format", nil, []string{"--repo", dir, "--dry-run", "--format", "sarif"}, "--format"},
		{"push", map[string]string{"GITHUB_TOKEN": "t0ken"}, []string{"--repo", dir, "--github", "acme/cfg", "--push", "ssh"}, "--push \"ssh\": want auto, api or git"},
		{"findings not a report", nil, []string{"--repo", dir, "--dry-run", "--findings", "testdata/gate-example.json"}, "want \"fleetaudit.findings/v1\""},
		{"unknown fleet", nil, []string{"--repo", dir, "--dry-run", "--fleet", "nope"}, "--fleet nope: not a fleet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.env, append([]string{"remediate"}, tc.args...)...)
			if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, tc.want)
			}
			if strings.Contains(r.stderr+r.stdout, "t0ken") {
				t.Error("the token was printed")
			}
		})
	}
}

func TestRemediateCompletesRepoFleets(t *testing.T) {
	r := runCLI(t, nil, "__complete", "remediate", "--repo", exampleConfigRepo, "--fleet", "")
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if diff := cmp.Diff([]string{"gpu-training", "web-serving", ":4"}, got); diff != "" {
		t.Errorf("completion (-want +got):\n%s", diff)
	}
}

// --github hands the proven proposals to the publisher with the token from
// GITHUB_TOKEN: a refused token stops the run with exit 2, and the token is
// sent in the Authorization header but never printed.
func TestRemediateGitHubTokenRefused(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	const token = "ghp_s3cr3t-token-value"
	var calls, authed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") == "Bearer "+token || r.Header.Get("Authorization") == "token "+token {
			authed.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}`)
	}))
	defer srv.Close()
	r := runCLI(t, map[string]string{"GITHUB_TOKEN": token}, "remediate", "--repo", dir, "--rule", "hugetlb-cma-on-gpu",
		"--github", "acme/fleet-config", "--github-api", srv.URL)
	if r.code != exitError {
		t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if calls.Load() == 0 || authed.Load() != calls.Load() {
		t.Errorf("%d calls, %d with the token", calls.Load(), authed.Load())
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Error("the token was printed")
	}
	if !strings.Contains(r.stderr, "401") {
		t.Errorf("stderr does not say the token was refused:\n%s", r.stderr)
	}
}

// The dry run's table wraps to the terminal's width ($COLUMNS here, as for
// the other tables), all but the diff, which must still apply as printed.
func TestRemediateDryRunWraps(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	r := runCLI(t, map[string]string{"COLUMNS": "60"}, "remediate", "--repo", dir, "--dry-run", "--rule", "hugetlb-cma-on-gpu")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	inDiff := false
	for _, l := range strings.Split(r.stdout, "\n") {
		switch {
		case l == "diff:":
			inDiff = true
		case inDiff && l == "":
			inDiff = false
		case !inDiff && len(l) > 60:
			t.Errorf("line of %d columns, wider than COLUMNS=60: %q", len(l), l)
		}
	}
	if !strings.Contains(r.stdout, "\ndiff --git a/layers/gpu/etc/default/grub.d/99-fleetaudit.cfg b/layers/gpu/etc/default/grub.d/99-fleetaudit.cfg\n") {
		t.Errorf("the diff header was wrapped:\n%s", r.stdout)
	}
}
