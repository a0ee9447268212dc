package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeWaivers(t *testing.T, dir, doc string) string {
	t.Helper()
	p := filepath.Join(dir, "waivers.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waiveAllCritical waives the example fleet's critical findings (hugetlb
// CMA on every GPU node, the fabric manager on gpu-a-005) until expires.
func waiveAllCritical(expires string) string {
	return fmt.Sprintf(`waivers:
  - rule: hugetlb-cma-on-gpu
    fleet: gpu-training
    owner: alice@example.com
    justification: INFRA-1234 removes the drop-in in the next window.
    expires: %[1]s
  - rule: fabric-manager-mismatch
    hosts: [gpu-a-005]
    owner: bob@example.com
    justification: Host drained until the fabric manager upgrade.
    expires: %[1]s
  - rule: hugetlb-cma-on-gpus
    fleet: gpu-training
    owner: dave@example.com
    justification: A typo in the rule id.
    expires: %[1]s
  - rule: nccl-debug-env
    fleet: web-serving
    owner: carol@example.com
    justification: Nothing to waive here.
    expires: %[1]s
`, expires)
}

func TestAuditWaiversAndFailOn(t *testing.T) {
	dir := t.TempDir()
	args := []string{"audit", "--inventory", exampleInventory, "--snapshots", exampleSnapshots, "--fail-on", "critical"}

	r := runCLI(t, nil, append(args, "--format", "json", "-o", filepath.Join(dir, "plain.json"))...)
	if r.code != exitFindings {
		t.Fatalf("without waivers: exit %d, want %d\n%s", r.code, exitFindings, r.stderr)
	}
	// What the waivers below cover, counted in the unwaived audit: every
	// hugetlb-cma-on-gpu finding of gpu-training (critical or high) and
	// gpu-a-005's fabric manager; every critical finding is among them.
	var plain struct {
		Findings []struct {
			Rule     string `json:"rule"`
			Host     string `json:"host"`
			Fleet    string `json:"fleet"`
			Severity string `json:"severity"`
		} `json:"findings"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "plain.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &plain); err != nil {
		t.Fatalf("json: %v\n%s", err, data)
	}
	hugetlb, fabric := 0, 0
	for _, f := range plain.Findings {
		switch {
		case f.Rule == "hugetlb-cma-on-gpu" && f.Fleet == "gpu-training":
			hugetlb++
		case f.Rule == "fabric-manager-mismatch" && f.Host == "gpu-a-005":
			fabric++
		case f.Severity == "critical":
			t.Fatalf("critical %s on %s is not covered by the waivers below", f.Rule, f.Host)
		}
	}
	if hugetlb < 2 || fabric != 1 {
		t.Fatalf("the example fleet has %d hugetlb-cma-on-gpu and %d fabric-manager-mismatch findings; the test needs several and one", hugetlb, fabric)
	}

	file := writeWaivers(t, dir, waiveAllCritical("2099-12-31"))
	r = runCLI(t, nil, append(args, "--waivers", file, "--format", "json")...)
	if r.code != exitOK {
		t.Fatalf("every critical finding waived: exit %d, want 0\n%s", r.code, r.stderr)
	}
	var doc struct {
		Findings []struct {
			Rule   string `json:"rule"`
			Waived *struct {
				Owner  string `json:"owner"`
				Source string `json:"source"`
			} `json:"waived"`
		} `json:"findings"`
		Waivers struct {
			Waived  int `json:"waived"`
			Stale   int `json:"stale"`
			Waivers []struct {
				Rule  string `json:"rule"`
				State string `json:"state"`
			} `json:"waivers"`
		} `json:"waivers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	waived := 0
	for _, f := range doc.Findings {
		if f.Waived != nil {
			waived++
			if f.Rule != "hugetlb-cma-on-gpu" && f.Rule != "fabric-manager-mismatch" {
				t.Errorf("%s waived", f.Rule)
			}
			if !strings.HasSuffix(f.Waived.Source, "waivers.yaml:2") && !strings.HasSuffix(f.Waived.Source, "waivers.yaml:7") {
				t.Errorf("waiver source %q", f.Waived.Source)
			}
		}
	}
	// Waived findings are marked, never dropped.
	if want := hugetlb + fabric; waived != want || doc.Waivers.Waived != want || len(doc.Findings) != len(plain.Findings) {
		t.Errorf("%d of %d findings waived (report says %d), want %d of %d still listed", waived, len(doc.Findings), doc.Waivers.Waived, want, len(plain.Findings))
	}
	if !strings.Contains(r.stderr, `waiver names no rule (did you mean \"hugetlb-cma-on-gpu\"?)`) {
		t.Errorf("a waiver with a misspelt rule id is not called out:\n%s", r.stderr)
	}
	if doc.Waivers.Stale != 2 || !strings.Contains(r.stderr, "waiver matches no finding (stale)") {
		t.Errorf("stale waiver not reported: %d stale\n%s", doc.Waivers.Stale, r.stderr)
	}

	// High findings are not waived: --fail-on high still fails.
	if r := runCLI(t, nil, "audit", "--inventory", exampleInventory, "--snapshots", exampleSnapshots, "--waivers", file, "-o", filepath.Join(dir, "h.txt")); r.code != exitFindings {
		t.Errorf("--fail-on high with only critical waived: exit %d, want 1", r.code)
	}

	// Expired: the waivers stop applying, and say so.
	expired := writeWaivers(t, t.TempDir(), waiveAllCritical("2020-01-31"))
	r = runCLI(t, nil, append(args, "--waivers", expired, "-o", filepath.Join(dir, "e.txt"))...)
	if r.code != exitFindings || !strings.Contains(r.stderr, "waiver expired: its findings count again") {
		t.Errorf("expired waivers: exit %d, want 1 with a warning\n%s", r.code, r.stderr)
	}
	table, _ := os.ReadFile(filepath.Join(dir, "e.txt"))
	if !strings.Contains(string(table), "Waivers to review:") || !strings.Contains(string(table), fmt.Sprintf("its %d findings count again", hugetlb)) || !strings.Contains(string(table), "its 1 finding counts again") {
		t.Errorf("the table does not report the expired waivers:\n%s", table)
	}
}

func TestAuditWaiversFileErrors(t *testing.T) {
	file := writeWaivers(t, t.TempDir(), "waivers:\n  - rule: hugetlb-cma-on-gpu\n    fleet: gpu-training\n    owner: alice\n    expires: 2099-01-01\n")
	r := runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--waivers", file)
	if r.code != exitError || !strings.Contains(r.stderr, file+":2: waiver 1 (hugetlb-cma-on-gpu): justification is required") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--waivers", file, "-o", file)
	if r.code != exitError {
		t.Errorf("-o naming the waivers file: exit %d", r.code)
	}
	r = runCLI(t, nil, "audit", "--snapshots", exampleSnapshots, "--group-by", "fleet")
	if r.code != exitError || !strings.Contains(r.stderr, `--group-by: unknown grouping "fleet": want one of rule, host, none`) {
		t.Errorf("bad --group-by: exit %d\n%s", r.code, r.stderr)
	}
}

// Above GroupAutoHosts hosts the table groups by rule unless told not to.
func TestAuditGroupsLargeFleetsByRule(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(exampleSnapshots, "web-01.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snap map[string]any
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := 1; i <= 60; i++ {
		snap["host"] = fmt.Sprintf("web-%03d", i)
		out, _ := json.Marshal(snap)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("web-%03d.json", i)), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, nil, "audit", "--snapshots", dir, "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{" SEVERITY  HOSTS ", "60: web-[001-060]", "sysctl.running.vm.max_map_count: 65530 ×60"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("grouped table lacks %q:\n%s", want, r.stdout)
		}
	}
	if lines := strings.Count(r.stdout, "\n"); lines > 60 {
		t.Errorf("grouped table of 60 hosts has %d lines", lines)
	}
	r = runCLI(t, nil, "audit", "--snapshots", dir, "--fail-on", "none", "--group-by", "none")
	if strings.Count(r.stdout, "web-060") < 2 {
		t.Errorf("--group-by none lists findings per host:\n%.2000s", r.stdout)
	}
}

// The gate takes waivers.yaml from the base commit: a change cannot waive
// its own findings; a waiver merged before it does.
func TestGateHonoursWaiversFromBase(t *testing.T) {
	waiver := `waivers:
  - rule: hugetlb-cma-on-gpu
    paths: ["layers/base/**"]
    owner: platform@example.com
    justification: PLAT-77 moves the CMA reservation out of the base layer.
    expires: 2099-01-01
`
	// The change brings its own waiver: not honoured.
	dir, base := exampleRepo(t)
	plantHugetlbCMA(t, dir)
	writeWaivers(t, dir, waiver)
	r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--fail-on", "critical")
	if r.code != exitFindings {
		t.Errorf("waiver added by the change itself: exit %d, want 1\n%s", r.code, r.stderr)
	}

	// The waiver merged first: honoured, the finding still shown as waived.
	dir, _ = exampleRepo(t)
	writeWaivers(t, dir, waiver)
	gitIn(t, dir, "add", "waivers.yaml")
	gitIn(t, dir, "commit", "-q", "-m", "waive hugetlb in base")
	base = gitIn(t, dir, "rev-parse", "HEAD")
	plantHugetlbCMA(t, dir)
	r = runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--fail-on", "critical", "--format", "markdown")
	if r.code != exitOK {
		t.Fatalf("waiver at base: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"critical (waived)", "waived until 2099-01-01 by platform@example.com (waivers.yaml@" + base[:12] + ":2)", "| active | `hugetlb-cma-on-gpu` |"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gate markdown lacks %q:\n%s", want, r.stdout)
		}
	}

	// --waivers names the file explicitly.
	dir, base = exampleRepo(t)
	plantHugetlbCMA(t, dir)
	file := writeWaivers(t, t.TempDir(), waiver)
	if r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--fail-on", "critical", "--waivers", file); r.code != exitOK {
		t.Errorf("--waivers: exit %d, want 0\n%s", r.code, r.stderr)
	}
}

// Every format the gate and audit list runs end to end through the CLI.
func TestEveryFormatThroughTheCLI(t *testing.T) {
	dir, base := exampleRepo(t)
	plantHugetlbCMA(t, dir)
	for _, format := range []string{"markdown", "sarif", "junit", "prometheus", "html"} {
		out := filepath.Join(t.TempDir(), "report")
		r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--format", format, "--fail-on", "none", "-o", out)
		if data, err := os.ReadFile(out); r.code != exitOK || err != nil || len(data) == 0 {
			t.Errorf("gate --format %s: exit %d, %d bytes, %v\n%s", format, r.code, len(data), err, r.stderr)
		}
		r = runCLI(t, nil, "audit", "--inventory", exampleInventory, "--snapshots", exampleSnapshots, "--format", format, "--fail-on", "none", "-o", out)
		if data, err := os.ReadFile(out); r.code != exitOK || err != nil || len(data) == 0 {
			t.Errorf("audit --format %s: exit %d, %d bytes, %v\n%s", format, r.code, len(data), err, r.stderr)
		}
	}
}

// An invalid waivers.yaml at base applies no waiver and says so; the gate
// still runs, so the change repairing the file can pass.
func TestGateInvalidBaseWaivers(t *testing.T) {
	dir, _ := exampleRepo(t)
	writeWaivers(t, dir, "waivers:\n  - rule: hugetlb-cma-on-gpu\n    paths: ['layers/base/**']\n    owner: x\n    expires: 2099-01-01\n")
	gitIn(t, dir, "add", "waivers.yaml")
	gitIn(t, dir, "commit", "-q", "-m", "bad waiver")
	base := gitIn(t, dir, "rev-parse", "HEAD")
	plantHugetlbCMA(t, dir)
	r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--fail-on", "critical")
	if r.code != exitFindings {
		t.Errorf("exit %d, want 1 (no waiver applies)\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"warning: waivers.yaml@" + base[:12] + ":2: waiver 1", "justification is required", "no waiver applies"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
}
