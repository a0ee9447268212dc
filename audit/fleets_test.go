package audit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
)

// gpuNodeSnapshot is the collected gpu-node fixture: eight H100s, RDMA
// devices, hugetlb_cma=6G on the running kernel command line.
const gpuNodeSnapshot = "../collectors/testdata/golden/gpu-node.json"

// writeAs writes the gpu-node snapshot into dir once per host name, with
// edit applied to the document.
func writeAs(t *testing.T, dir string, edit func(doc map[string]any), hosts ...string) []string {
	t.Helper()
	data, err := os.ReadFile(gpuNodeSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, h := range hosts {
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		doc["host"] = h
		if edit != nil {
			edit(doc)
		}
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, h+".json")
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func writeProfiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type hostRule struct{ Host, Fleet, Rule, Severity string }

func findingsOf(r *Result, rules ...string) []hostRule {
	var out []hostRule
	for _, f := range r.Findings {
		for _, id := range rules {
			if f.Rule == id {
				out = append(out, hostRule{f.Host, f.Fleet, f.Rule, f.Severity})
			}
		}
	}
	return out
}

// The case: three copies of the gpu-node fixture named trn-01..03
// matched no hostname glob, landed in unknown-fleet (medium) and got none
// of the GPU rules, so the audit passed at --fail-on high with hugetlb_cma
// set on every host.
func TestGPUHostsOfNoKnownNameAreGPUTraining(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeAs(t, dir, nil, "trn-01", "trn-02", "trn-03")
	res, err := Run(context.Background(), Options{Fleets: set, Snapshots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	want := []hostRule{
		{"trn-01", "gpu-training", "hugetlb-cma-on-gpu", "critical"},
		{"trn-02", "gpu-training", "hugetlb-cma-on-gpu", "critical"},
		{"trn-03", "gpu-training", "hugetlb-cma-on-gpu", "critical"},
	}
	if diff := cmp.Diff(want, findingsOf(res, "hugetlb-cma-on-gpu", "unknown-fleet")); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if got := res.Summary.Fleets["gpu-training"].Hosts; got != 3 {
		t.Errorf("gpu-training hosts = %d, want 3 (summary %+v)", got, res.Summary)
	}
	if res.MaxSeverityRank() < policies.SeverityRank("high") {
		t.Error("the audit passes at --fail-on high")
	}
}

func TestGPUHostInNoFleetIsHigh(t *testing.T) {
	// A site's gpu-training that matches by name only: a GPU host named
	// otherwise is left in no fleet.
	dir := writeProfiles(t, map[string]string{"gpu-training.yaml": "includes: [common]\nmatch: {hostnames: ['gpu-*']}\nrules: {include: ['tag:gpu-training']}\n"})
	set, err := fleets.Load(true, dir)
	if err != nil {
		t.Fatal(err)
	}
	snaps := t.TempDir()
	writeAs(t, snaps, nil, "trn-01")
	writeAs(t, snaps, func(doc map[string]any) {
		doc["nvidia"] = map[string]any{"present": false, "gpus": []any{}}
	}, "db-01")
	// No nvidia section: whether it has GPUs is not known, so the rule is
	// skipped, and the summary says so.
	writeAs(t, snaps, func(doc map[string]any) { delete(doc, "nvidia") }, "db-02")
	res, err := Run(context.Background(), Options{Fleets: set, Snapshots: []string{snaps}})
	if err != nil {
		t.Fatal(err)
	}
	want := []hostRule{
		{"trn-01", "", "unknown-fleet", "high"},
		{"db-01", "", "unknown-fleet", "medium"},
	}
	if diff := cmp.Diff(want, findingsOf(res, "unknown-fleet", "hugetlb-cma-on-gpu")); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if n := res.Summary.RulesSkipped["unknown-fleet"]; n != 1 {
		t.Errorf("unknown-fleet skipped on %d hosts, want 1 (db-02)", n)
	}
}

// Profiles are checked against the compiled rules before anything is
// audited, each error naming the file and line.
func TestProfilesCheckedAgainstTheRules(t *testing.T) {
	tests := []struct {
		name, profile, want string
	}{
		{"unknown param", "name: site\nincludes: [gpu-training]\nparams:\n  memlock_min_kib: unlimited\n",
			`site.yaml:4: invalid fleet profile: params: no rule reads "memlock_min_kib" (did you mean "memlock_min_kb"?)`},
		{"unknown include id", "name: site\nrules:\n  include: [hugetlb-cma-on-gpus]\n",
			`site.yaml:3: invalid fleet profile: rules.include: "hugetlb-cma-on-gpus" matches no rule id (did you mean "hugetlb-cma-on-gpu"?)`},
		{"unknown exclude id", "name: site\nincludes: [gpu-training]\nrules:\n  exclude:\n  - numa-balancing\n",
			`site.yaml:5: invalid fleet profile: rules.exclude: "numa-balancing" matches no rule id`},
		// The engine refuses this one first, without the file.
		{"unknown severity id", "name: site\nincludes: [gpu-training]\nrules:\n  severity:\n    hugetlb-cma: low\n",
			`site.yaml:5: invalid fleet profile: rules.severity: no rule has id "hugetlb-cma"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeProfiles(t, map[string]string{"site.yaml": tt.profile})
			set, err := fleets.Load(true, dir)
			if err != nil {
				t.Fatal(err)
			}
			snaps := t.TempDir()
			writeAs(t, snaps, nil, "trn-01")
			_, err = Run(context.Background(), Options{Fleets: set, Snapshots: []string{snaps}})
			if !errors.Is(err, fleets.ErrInvalidProfile) || !strings.Contains(err.Error(), filepath.Join(dir, tt.want)) {
				t.Errorf("Run = %v\nwant %s", err, tt.want)
			}
		})
	}
}
