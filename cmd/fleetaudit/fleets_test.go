package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command: three copies of the gpu-node fixture named
// trn-01..03 audited clean at the default --fail-on, hugetlb_cma and all.
func TestAuditGPUHostsOfNoKnownName(t *testing.T) {
	data, err := os.ReadFile("../../collectors/testdata/golden/gpu-node.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, h := range []string{"trn-01", "trn-02", "trn-03"} {
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		doc["host"] = h
		out, _ := json.Marshal(doc)
		if err := os.WriteFile(filepath.Join(dir, h+".json"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, nil, "audit", "--snapshots", dir, "--format", "json")
	if r.code != exitFindings {
		t.Fatalf("exit %d, want %d (findings at or above high)\n%s", r.code, exitFindings, r.stderr)
	}
	var rep struct {
		Findings []struct{ Host, Fleet, Rule string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Rule == "unknown-fleet" {
			t.Errorf("%s: unknown-fleet", f.Host)
		}
		if f.Rule == "hugetlb-cma-on-gpu" && f.Fleet == "gpu-training" {
			got[f.Host] = true
		}
	}
	if len(got) != 3 {
		t.Errorf("hugetlb-cma-on-gpu in gpu-training on %v, want trn-01..03\n%s", got, strings.Join(strings.SplitN(r.stdout, "\n", 40), "\n"))
	}
}
