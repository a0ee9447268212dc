package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
)

// TestFixtureFleetCoversEveryRuleFamily audits the fixture hosts of
// testdata/hosts (three of them with the pods of testdata/pods) end to end,
// pins every finding in testdata/fixture-fleet.txt, and checks that each
// family of built-in rules (one Rego package) fires on some host.
func TestFixtureFleetCoversEveryRuleFamily(t *testing.T) {
	dir := t.TempDir()
	var snaps []string
	for host, root := range map[string]string{"gpu-a-001": "gpu-node", "gpu-b-007": "dropins", "gpu-e-001": "efa-node"} {
		out := filepath.Join(dir, host+".json")
		r := runCLI(t, nil, "collect", "--root", "../../testdata/hosts/"+root, "--pods", "../../testdata/pods/"+host+".json", "-o", out)
		if r.code != exitOK {
			t.Fatalf("collect %s: exit %d\n%s", root, r.code, r.stderr)
		}
		snaps = append(snaps, "--snapshots", out)
	}
	// A host no profile matches by name or by facts (no GPUs): web-node's
	// tree under another name. (junk-01 has a GPU, so gpu-training takes it.)
	out := filepath.Join(dir, "db-01.json")
	if r := runCLI(t, nil, "collect", "--root", "../../testdata/hosts/web-node", "--hostname", "db-01", "-o", out); r.code != exitOK {
		t.Fatalf("collect web-node as db-01: exit %d\n%s", r.code, r.stderr)
	}
	snaps = append(snaps, "--snapshots", out)
	args := append([]string{"audit", "--format", "json", "--fail-on", "none"}, snaps...)
	for _, root := range []string{"web-node", "rhel-node", "garbage", "dmabuf-node"} {
		args = append(args, "--root", "../../testdata/hosts/"+root)
	}
	r := runCLI(t, nil, args...)
	if r.code != exitOK {
		t.Fatalf("audit: exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Findings []policies.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var lines []string
	fired := map[string]bool{}
	for _, f := range doc.Findings {
		lines = append(lines, fmt.Sprintf("%-10s %-12s %-8s %s", f.Host, f.Fleet, f.Severity, f.Rule))
		fired[f.Rule] = true
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	got := strings.Join(lines, "\n") + "\n"
	checkGolden(t, "fixture-fleet.txt", got)

	engine, err := policies.New(context.Background(), policies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	families := map[string][]string{}
	for _, rule := range engine.Rules() {
		// data.fleetaudit.rules.<family>.<rule> or data.fleetaudit.fleet_rules.<family>.<rule>
		parts := strings.Split(rule.Ref, ".")
		if len(parts) != 5 {
			t.Fatalf("rule %s: unexpected ref %s", rule.ID, rule.Ref)
		}
		family := parts[2] + "." + parts[3]
		families[family] = append(families[family], rule.ID)
	}
	for family, ids := range families {
		if !slices.ContainsFunc(ids, func(id string) bool { return fired[id] }) {
			t.Errorf("no fixture host triggers a rule of family %s (%s)", family, strings.Join(ids, ", "))
		}
	}
}
