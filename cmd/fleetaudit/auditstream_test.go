package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
)

// JSON streams its findings, sharing one encoding between hosts that are
// equal but for their name, also with a waivers file: a waiver scoped to
// one host of such a group marks that host's finding only, and --fail-on
// still counts the others.
func TestAuditJSONWaiverOnEqualHosts(t *testing.T) {
	dir := t.TempDir()
	snaps := filepath.Join(dir, "snapshots")
	if err := fleetgen.Generate(fleetgen.Options{N: 20, Dir: snaps, Roots: "../../testdata/hosts", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	web, err := os.ReadFile(filepath.Join(snaps, "web-00018.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-90001", "web-90002", "web-90003"} {
		b := bytes.Replace(web, []byte(`"host":"web-00018"`), []byte(`"host":"`+name+`"`), 1)
		if err := os.WriteFile(filepath.Join(snaps, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := writeWaivers(t, dir, `waivers:
  - rule: thp-always
    hosts: [web-90002]
    owner: alice@example.com
    justification: drained for repair
    expires: 2099-12-31
`)
	r := runCLI(t, nil, "audit", "--snapshots", snaps, "--waivers", file, "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Findings []struct {
			Rule   string          `json:"rule"`
			Host   string          `json:"host"`
			Waived json.RawMessage `json:"waived"`
		} `json:"findings"`
		Waivers struct {
			Waived int `json:"waived"`
		} `json:"waivers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	seen := map[string]bool{}
	for _, f := range doc.Findings {
		if f.Rule != "thp-always" {
			if f.Waived != nil {
				t.Errorf("%s on %s waived", f.Rule, f.Host)
			}
			continue
		}
		seen[f.Host] = true
		if waived := f.Waived != nil; waived != (f.Host == "web-90002") {
			t.Errorf("thp-always on %s: waived %v", f.Host, waived)
		}
	}
	if !seen["web-90001"] || !seen["web-90002"] || !seen["web-90003"] || doc.Waivers.Waived != 1 {
		t.Errorf("thp-always on %v, %d waived; want each of the three hosts, one waived", seen, doc.Waivers.Waived)
	}
}
