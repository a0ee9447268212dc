package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// slowPolicyDir holds a user rule that counts to ten billion: hours
// without a rule budget. Its severity is low, below every --fail-on used.
func slowPolicyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rule := `package fleetaudit.rules.site

# METADATA
# title: Slow
# description: counts to ten billion
# related_resources: [{ref: "https://example.com"}]
# custom: {id: slow-rule, severity: low, profiles: [all], remediation: r, facts: [host]}
slow_rule contains f if {
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i * j == -1
	f := {"msg": "never", "evidence": ["host"]}
}
`
	if err := os.WriteFile(filepath.Join(dir, "slow.rego"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runCLIWithin is runCLI with env, failing the test when it runs past
// hangGuard.
func runCLIWithin(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- runCLI(t, env, args...) }()
	select {
	case r := <-done:
		return r
	case <-time.After(hangGuard):
		t.Fatalf("fleetaudit %s still running after %s", strings.Join(args, " "), hangGuard)
		return result{}
	}
}

// gate --rule-timeout bounds each rendered fleet's rules as audit's bounds
// a host's: a rule past it is the collection-error finding audit reports,
// and the fleet is not gated in full, so the gate exits 2 whatever
// --fail-on says: an unknown result never passes. The budget is also the
// gate section's rule-timeout (here its environment variable).
func TestGateRuleTimeout(t *testing.T) {
	dir, base := exampleRepo(t)
	slow := slowPolicyDir(t)
	for name, c := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"flag":        {nil, []string{"--rule-timeout", "100ms"}},
		"environment": {map[string]string{"FLEETAUDIT_GATE_RULE_TIMEOUT": "100ms"}, nil},
	} {
		args := append([]string{"gate", "--repo", dir, "--base", base, "--policies", slow, "--format", "json", "--fail-on", "none"}, c.args...)
		r := runCLIWithin(t, c.env, args...)
		type finding struct {
			Rule    string `json:"rule"`
			Message string `json:"message"`
		}
		var doc struct {
			Fleets []struct {
				Fleet     string    `json:"fleet"`
				Unchanged []finding `json:"unchanged"`
			} `json:"fleets"`
			Errors []struct {
				Fleet    string   `json:"fleet"`
				Error    string   `json:"error"`
				TimedOut []string `json:"timed_out"`
			} `json:"errors"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%s: exit %d, not a gate document: %v\n%s\n%s", name, r.code, err, r.stdout, r.stderr)
		}
		if r.code != exitError || !strings.Contains(r.stderr, "could not be gated in full") {
			t.Errorf("%s: exit %d, want %d (not gated in full)\n%s", name, r.code, exitError, r.stderr)
		}
		// Two fleets, each timed out at base and at head.
		if len(doc.Errors) != 4 {
			t.Errorf("%s: errors %+v, want one per fleet side", name, doc.Errors)
		}
		for _, e := range doc.Errors {
			if !slices.Equal(e.TimedOut, []string{"slow-rule"}) || !strings.Contains(e.Error, "slow-rule did not finish within 100ms") {
				t.Errorf("%s: error %+v, want slow-rule timed out", name, e)
			}
		}
		for _, f := range doc.Fleets {
			want := finding{"collection-error", "rule slow-rule did not finish within 100ms; its findings for this host are unknown"}
			if !slices.Contains(f.Unchanged, want) {
				t.Errorf("%s: fleet %s: no collection-error for slow-rule in %+v", name, f.Fleet, f.Unchanged)
			}
		}
	}
	if r := runCLI(t, nil, "gate", "--repo", dir, "--base", base, "--rule-timeout", "-1s"); r.code != exitError || !strings.Contains(r.stderr, "--rule-timeout -1s: want a positive duration") {
		t.Errorf("negative --rule-timeout: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// remediate --rule-timeout is the budget of the gate that proves each fix:
// a fix whose proof has a rule past it is refused naming the rule (exit 1),
// and the repo's fleets are said not to be audited in full.
func TestRemediateRuleTimeout(t *testing.T) {
	dir, _ := cmaExampleRepo(t)
	r := runCLIWithin(t, nil, "remediate", "--repo", dir, "--dry-run", "--format", "json", "--rule", "hugetlb-cma-on-gpu",
		"--policies", slowPolicyDir(t), "--rule-timeout", "100ms")
	var doc struct {
		Proposals []json.RawMessage `json:"proposals"`
		Refused   []struct {
			Rule   string `json:"rule"`
			Reason string `json:"reason"`
		} `json:"refused"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d, not a remediate document: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if r.code != exitFindings || len(doc.Proposals) != 0 || len(doc.Refused) != 1 || !strings.Contains(doc.Refused[0].Reason, "slow-rule did not finish within 100ms") {
		t.Errorf("exit %d, %d proposals, refused %+v: want the fix refused naming slow-rule\n%s", r.code, len(doc.Proposals), doc.Refused, r.stderr)
	}
	if len(doc.Warnings) == 0 || !strings.Contains(doc.Warnings[0], "slow-rule") {
		t.Errorf("warnings %q: want the fleets not audited in full at base", doc.Warnings)
	}
	if r := runCLI(t, nil, "remediate", "--repo", dir, "--dry-run", "--rule-timeout", "-1s"); r.code != exitError || !strings.Contains(r.stderr, "--rule-timeout -1s: want a positive duration") {
		t.Errorf("negative --rule-timeout: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
