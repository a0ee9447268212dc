package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestPoliciesListPerFleet(t *testing.T) {
	r := runCLI(t, nil, "policies", "list", "--fleet", "web-serving", "--format", "json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var rules []struct {
		ID       string   `json:"id"`
		Profiles []string `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rules); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, rule := range rules {
		ids[rule.ID] = true
	}
	if !ids["thp-always"] || !ids["unknown-fleet"] || ids["hugetlb-cma-on-gpu"] {
		t.Errorf("web-serving rules = %v; want web and all-fleet rules, no GPU rules", ids)
	}
	all := runCLI(t, nil, "policies", "list")
	if !strings.Contains(all.stdout, "hugetlb-cma-on-gpu") || !strings.HasPrefix(all.stdout, "ID ") {
		t.Errorf("list:\n%s", all.stdout)
	}
}

func TestPoliciesListShowsProfileOverrides(t *testing.T) {
	dir := t.TempDir()
	profile := "name: gpu-lab\nincludes: [gpu-training]\nmatch: {hostnames: [\"lab-*\"]}\nrules:\n  exclude: [numa-balancing-enabled]\n  severity: {hugetlb-cma-on-gpu: info}\n"
	if err := os.WriteFile(filepath.Join(dir, "gpu-lab.yaml"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	table := runCLI(t, nil, "policies", "list", "--fleets", dir, "--fleet", "gpu-lab")
	if table.code != exitOK {
		t.Fatalf("exit %d\n%s", table.code, table.stderr)
	}
	for _, want := range []string{"info (rule: critical)", "Excluded by profile gpu-lab: numa-balancing-enabled"} {
		if !strings.Contains(table.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, table.stdout)
		}
	}
	js := runCLI(t, nil, "policies", "list", "--fleets", dir, "--fleet", "gpu-lab", "--format", "json")
	var rules []struct {
		ID               string `json:"id"`
		Severity         string `json:"severity"`
		SeverityOverride *struct {
			RuleSeverity string `json:"rule_severity"`
			Profile      string `json:"profile"`
		} `json:"severity_override"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &rules); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		switch {
		case r.ID == "numa-balancing-enabled":
			t.Error("an excluded rule is listed")
		case r.ID == "hugetlb-cma-on-gpu":
			if r.Severity != "info" || r.SeverityOverride == nil || r.SeverityOverride.RuleSeverity != "critical" || r.SeverityOverride.Profile != "gpu-lab" {
				t.Errorf("hugetlb-cma-on-gpu: %+v", r)
			}
		case r.SeverityOverride != nil:
			t.Errorf("%s: unexpected override %+v", r.ID, r.SeverityOverride)
		}
	}
}

func TestPoliciesExplain(t *testing.T) {
	r := runCLI(t, nil, "policies", "explain", "removeipc-enabled")
	for _, want := range []string{"removeipc-enabled  (high", "Remediation:", "logind.remove_ipc", "https://github.com/systemd/systemd/issues/2039", "policies/lib/rules/logind.rego:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := runCLI(t, nil, "policies", "explain", "no-such-rule"); r.code != exitError || !strings.Contains(r.stderr, `no rule has id "no-such-rule"`) {
		t.Errorf("unknown id: exit %d\n%s", r.code, r.stderr)
	}
}

// TestWritingPoliciesExample keeps docs/writing-policies.md honest: its
// example rule and test load, pass, and run in an audit.
func TestWritingPoliciesExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/writing-policies.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```rego\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 2 {
		t.Fatalf("found %d rego blocks in the doc, want the rule and its test", len(blocks))
	}
	dir := t.TempDir()
	for name, src := range map[string]string{"site.rego": blocks[0][1], "site_test.rego": blocks[1][1]} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, nil, "policies", "test", dir)
	if r.code != exitOK || !regexp.MustCompile(`PASS: \d+/\d+`).MatchString(r.stdout) {
		t.Fatalf("policies test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "policies", "explain", "swappiness-high", "--policies", dir); r.code != exitOK {
		t.Errorf("explain of the doc's rule: exit %d\n%s", r.code, r.stderr)
	}
	// The fleet-wide rule and its test, the last two blocks.
	fleetDir := t.TempDir()
	for name, src := range map[string]string{"fleet.rego": blocks[len(blocks)-2][1], "fleet_test.rego": blocks[len(blocks)-1][1]} {
		if err := os.WriteFile(filepath.Join(fleetDir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := runCLI(t, nil, "policies", "test", fleetDir); r.code != exitOK || !strings.Contains(r.stdout, "PASS: ") {
		t.Errorf("policies test of the doc's fleet rule: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	failing := "package fleetaudit.rules.site_test\n\nimport data.fleetaudit.rules.site\n\ntest_wrong if {\n\tcount(site.swappiness_high) == 1 with input as {\"sysctl\": {\"running\": {\"vm.swappiness\": \"1\"}}}\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "wrong_test.rego"), []byte(failing), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "policies", "test", dir)
	if r.code != exitFindings || !strings.Contains(r.stdout, "FAIL: 1/") || !strings.Contains(r.stdout, "test_wrong") {
		t.Errorf("a failing test: exit %d, want %d as for findings in every command\n%s", r.code, exitFindings, r.stdout)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package x\n\ny if {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "policies", "test", dir); r.code != exitError || !strings.Contains(r.stderr, "broken.rego") {
		t.Errorf("a broken policy: exit %d, want %d as for errors in every command\n%s", r.code, exitError, r.stderr)
	}
}

// policies list and explain (and rule id completion) read rule metadata
// from the parsed modules: a user rule that does not compile is listed and
// explained, and the compile error is the audit's, naming the file and
// line.
func TestPoliciesListDoesNotCompile(t *testing.T) {
	dir := t.TempDir()
	src := `package fleetaudit.rules.site

# METADATA
# title: Kernel named oddly
# description: Calls a function nobody defined.
# related_resources:
#   - ref: https://docs.kernel.org/
# custom:
#   id: kernel-odd
#   severity: low
#   profiles: [gpu-training]
#   remediation: None.
#   facts: [kernel.release]
kernel_odd contains f if {
	f := {"msg": no_such_function(input.kernel.release)}
}
`
	if err := os.WriteFile(filepath.Join(dir, "site.rego"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	list := runCLI(t, nil, "policies", "list", "--policies", dir)
	if list.code != exitOK || !strings.Contains(list.stdout, "kernel-odd") || !strings.Contains(list.stdout, "hugetlb-cma-on-gpu") {
		t.Errorf("list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	explain := runCLI(t, nil, "policies", "explain", "kernel-odd", "--policies", dir)
	if explain.code != exitOK || !strings.Contains(explain.stdout, "site.rego:3") {
		t.Errorf("explain: exit %d\n%s%s", explain.code, explain.stdout, explain.stderr)
	}
	if got, _ := complete(t, "policies", "explain", "--policies", dir, "kernel-o"); !slices.Equal(got, []string{"kernel-odd"}) {
		t.Errorf("completion of rule ids: %v, want kernel-odd", got)
	}
	audit := runCLI(t, nil, "audit", "--snapshots", "../../examples/snapshots", "--policies", dir)
	if audit.code != exitError || !strings.Contains(audit.stderr, "site.rego:15") || !strings.Contains(audit.stderr, "no_such_function") {
		t.Errorf("audit: exit %d, want %d naming the compile error\n%s", audit.code, exitError, audit.stderr)
	}
}
