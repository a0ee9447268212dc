package remediate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A fix is proven by the gate with remediate's rule budget: a rule that
// runs past it at base + fix may have a finding there, so the fix is
// refused naming the rule, even though the rule timed out at base too
// (the same error at both sides is no proof), and the plan says the base
// was not audited in full. Without the budget the rule runs for hours.
func TestPlanRefusesAFixWhoseProofTimedOut(t *testing.T) {
	dir := t.TempDir()
	slow := `package fleetaudit.rules.slow

# METADATA
# title: Slow
# description: counts to ten billion
# related_resources: [{ref: "https://example.com"}]
# custom: {id: slow-host, severity: critical, profiles: [all], remediation: r, facts: [host]}
slow_host contains f if {
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i * j == -1
	f := {"msg": "never", "evidence": ["host"]}
}
`
	if err := os.WriteFile(filepath.Join(dir, "slow.rego"), []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cmaRepo(t, twoFleets)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := MakePlan(ctx, Options{Repo: r.Dir, Fleets: testFleets(t), PolicyDirs: []string{dir}, Rule: ruleCMA, RuleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	g := onlyGroup(t, p)
	if g.Proposal != nil || !strings.Contains(g.Refused, "slow-host did not finish within 100ms") {
		t.Errorf("proposed %v, refused %q: want refused naming slow-host\nproof %q", g.Proposal != nil, g.Refused, g.Proof)
	}
	if len(p.Warnings) != 2 || !strings.Contains(strings.Join(p.Warnings, "\n"), "slow-host") {
		t.Errorf("warnings %q: want both fleets not audited in full at base, naming slow-host", p.Warnings)
	}

	// Without the slow rule the fix is proven: the refusal is the timeout's.
	p = plan(t, r, Options{Rule: ruleCMA})
	proposal(t, onlyGroup(t, p))
}
