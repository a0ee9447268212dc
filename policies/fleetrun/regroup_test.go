package fleetrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Fleet rules evaluated on groups of their own facts give the report of
// every rule on the fleet's groups byte for byte (findings in report
// order, evidence, failures), with the built-in rules and user rules
// (which keep the fleet's groups), on fleets where every host differs
// (each its own group), fleets of repeated hosts and generated fleets
// whose hosts vary in what the rules read.
func TestRegroupedIsWholeGroups(t *testing.T) {
	adv := newEngine(t, policies.Options{PolicyDirs: []string{writeAdvPolicies(t, "")}, Fleets: advFleets()})
	builtin := newEngine(t, policies.Options{Fleets: gpuFleets()})
	tmp := t.TempDir()
	unique, repeated := filepath.Join(tmp, "unique"), filepath.Join(tmp, "repeated")
	if err := fleetgen.Generate(fleetgen.Options{N: 120, Dir: unique, Roots: "../../testdata/hosts", Seed: 5, Unique: true}); err != nil {
		t.Fatal(err)
	}
	if err := fleetgen.Generate(fleetgen.Options{N: 120, Dir: repeated, Roots: "../../testdata/hosts", Seed: 9}); err != nil {
		t.Fatal(err)
	}
	glob := func(dir string) []string {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no snapshots in %s: %v", dir, err)
		}
		slices.Sort(files)
		return files
	}
	type fleet struct {
		name  string
		files []string
	}
	fleets := []fleet{{"unique", glob(unique)}, {"repeated", glob(repeated)}, {"examples", glob("../../examples/fleet/snapshots")},
		{"variants", append(glob(unique), coverageVariants(t, glob(unique), t.TempDir())...)}}
	for _, seed := range guardSeeds() {
		fleets = append(fleets, fleet{fmt.Sprintf("generated seed %d (-evalguard.seed=%d)", seed, seed), genFleet(t, t.TempDir(), seed+400, 80)})
	}
	for _, f := range fleets {
		for _, e := range []*policies.Engine{builtin, adv} {
			skews := map[string]bool{}
			for _, workers := range []int{1, 2} {
				if workers == 1 && f.name != "unique" {
					// One worker changes only the order fleet rules run
					// in: one fleet shows it, and the test stays cheap
					// under -race.
					continue
				}
				var reports [2][]byte
				for i, whole := range []bool{false, true} {
					rep, err := Run(context.Background(), e, SnapshotFiles(f.files), RunOptions{FleetOf: fleetOfGen, Workers: workers, wholeGroups: whole})
					if err != nil {
						t.Fatal(err)
					}
					if reports[i], err = json.Marshal(rep); err != nil {
						t.Fatal(err)
					}
					var failures []string
					for _, x := range rep.Failures {
						failures = append(failures, fmt.Sprintf("%s%s: %v", x.Host, x.Fleet, x.Err))
					}
					reports[i] = append(reports[i], strings.Join(failures, "\n")...)
					for _, x := range rep.Findings {
						if strings.HasSuffix(x.Rule, "-skew") {
							skews[x.Rule] = true
						}
					}
				}
				if workers == 2 {
					rep, err := Run(context.Background(), e, SnapshotFiles(f.files), RunOptions{FleetOf: fleetOfGen, Workers: workers})
					if err != nil {
						t.Fatal(err)
					}
					want, _ := oracle(t, e, f.files)
					sameFindings(t, f.name, rep.Findings, want)
				}
				if !bytes.Equal(reports[0], reports[1]) {
					t.Errorf("%s, %d workers, %d user rules: the report on groups of each rule's facts differs from the report on the fleet's groups",
						f.name, workers, len(advRules))
				}
			}
			if f.name == "unique" && len(skews) < 4 {
				t.Errorf("%s: fleet-wide findings of %d skew rules; the test needs several", f.name, len(skews))
			}
		}
	}
}

// coverageVariants writes copies of some of files under new names, each
// the same but in what decides whether a fleet rule's finding stands on
// it and what it cites: an error that removed a fact a rule reads, an
// offline image's source, other sources for the facts fleet rules cite.
func coverageVariants(t *testing.T, files []string, dir string) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(files) && i < 120; i += 3 {
		b, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("gpu-9%04d", i)
		doc["host"] = name
		switch i % 4 {
		case 0, 1:
			path := []string{"net.interfaces", "sysctl.running"}[i%4]
			errs, _ := doc["errors"].([]any)
			doc["errors"] = append(errs, map[string]any{"collector": snapshot.CollectorSnapshot, "path": path, "reason": "removed: not an object"})
		case 2:
			doc["source"] = map[string]any{"image": true, "root": "/mnt/image"}
		case 3:
			sources, _ := doc["sources"].(map[string]any)
			for k, v := range sources {
				for _, p := range []string{"net.interfaces", "sysctl.running", "nvidia.driver_version", "kernel.release", "libraries.nccl", "boot.running"} {
					if k == p || strings.HasPrefix(k, p+".") {
						sources[k] = fmt.Sprint(v) + ".alt"
					}
				}
			}
		}
		b, err = json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, writeFile(t, dir, name+".json", string(b)))
	}
	return out
}

// On a fleet whose hosts all differ (gen -unique: each host its own
// group), the built-in fleet rules that read what hosts share see a few
// groups; boot-cmdline-skew reads each host's root= parameter and keeps
// a group per host; a user fleet rule keeps the fleet's groups.
func TestBuiltinFleetRulesRegroup(t *testing.T) {
	pol := t.TempDir()
	writeFile(t, pol, "fleet.rego", groupsRule)
	e := newEngine(t, policies.Options{PolicyDirs: []string{pol}, Fleets: gpuFleets()})
	dir := t.TempDir()
	if err := fleetgen.Generate(fleetgen.Options{N: 200, Dir: dir, Roots: "../../testdata/hosts", Seed: 5, Unique: true}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "gpu-*.json"))
	if err != nil || len(files) < 100 {
		t.Fatalf("%d gpu snapshots: %v", len(files), err)
	}
	s := &runState{e: e, budget: DefaultHostTimeout, sections: newSectionCache()}
	var groups []*policies.FleetGroup
	seen := map[*policies.Projection]bool{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		w := new(worker)
		doc, err := s.decode(b, w)
		if err != nil {
			t.Fatal(err)
		}
		p := s.fleetProjection(doc, &w.sections)
		if seen[p] {
			t.Fatalf("%s: two hosts of gen -unique share a projection", file)
		}
		seen[p] = true
		g := policies.NewFleetGroup(p)
		g.AddHosts(1)
		groups = append(groups, g)
	}
	fq, ok := e.Queries("gpu-training")
	if !ok {
		t.Fatal("no gpu-training fleet")
	}
	sizes := map[string]int{}
	for _, r := range fq.FleetRules() {
		sizes[r.ID] = len(groups)
		if !regroups(fq, r) {
			continue
		}
		if u := s.regroup(r, groups); u != nil {
			sizes[r.ID] = len(u.groups)
			hosts := 0
			for j := range u.groups {
				hosts += u.hosts[j]
				for _, m := range u.members[j] {
					if groups[m].Projection() == nil {
						t.Fatalf("%s: group %d has no projection", r.ID, m)
					}
				}
			}
			if hosts != len(files) {
				t.Errorf("%s: its groups hold %d hosts, want %d", r.ID, hosts, len(files))
			}
		}
	}
	for _, id := range []string{"mtu-skew", "sysctl-skew", "nccl-version-skew", "driver-version-skew", "kernel-version-skew"} {
		if n, ok := sizes[id]; !ok || n > len(groups)/2 {
			t.Errorf("%s sees %d groups of %d hosts (ok=%v), want at most half", id, n, len(groups), ok)
		}
	}
	for _, id := range []string{"boot-cmdline-skew", "fleet-shape"} {
		if sizes[id] != len(groups) {
			t.Errorf("%s sees %d groups, want the fleet's %d", id, sizes[id], len(groups))
		}
	}
}

// extendsBuiltin adds to the built-in sysctl-skew rule, from a user's
// module, a finding that reads the labels it does not declare.
const extendsBuiltin = `package fleetaudit.fleet_rules.sysctl

sysctl_skew contains {"group": g.group, "msg": sprintf("team %s", [g.labels.team]), "evidence": ["labels.team"]} if {
	some g in input.groups
	g.labels.team == "blue"
}
`

// A built-in rule that a user's module adds to (a definition in its
// package) reads what that code reads: it keeps the fleet's groups, and
// the report is the oracle's and the whole groups'.
func TestBuiltinRuleExtendedByUserKeepsGroups(t *testing.T) {
	pol := t.TempDir()
	writeFile(t, pol, "sysctl.rego", extendsBuiltin)
	e := newEngine(t, policies.Options{PolicyDirs: []string{pol}, Fleets: gpuFleets()})
	fq, _ := e.Queries("gpu-training")
	for _, r := range fq.FleetRules() {
		if got, want := fq.BuiltinOnly(r), r.ID != "sysctl-skew"; got != want {
			t.Errorf("%s: BuiltinOnly %v, want %v", r.ID, got, want)
		}
	}
	files := genFleet(t, t.TempDir(), guardSeeds()[0]+500, 80)
	var reports [2][]byte
	teams := 0
	for i, whole := range []bool{false, true} {
		rep, err := Run(context.Background(), e, SnapshotFiles(files), RunOptions{FleetOf: fleetOfGen, Workers: 2, wholeGroups: whole})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want, _ := oracle(t, e, files)
			sameFindings(t, "sysctl-skew extended", rep.Findings, want)
			for _, f := range rep.Findings {
				if f.Rule == "sysctl-skew" && f.Message == "team blue" {
					teams++
				}
			}
		}
		if reports[i], err = json.Marshal(rep); err != nil {
			t.Fatal(err)
		}
	}
	if teams == 0 {
		t.Fatal("the user's addition to sysctl-skew never fired")
	}
	if !bytes.Equal(reports[0], reports[1]) {
		t.Error("the report differs from the report on the fleet's groups")
	}
}
