package main

import (
	"encoding/json"
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
