package policies

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEvalHostIncidentNode(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	doc := host{Name: "gpu-a-001", HugetlbCMA: "6G", Driver: "535.104.05", RDMA: 2, Errors: 1, RemoveIPC: "yes"}.Doc(t)

	got, err := e.EvalHost(context.Background(), doc, "gpu-training")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"collection-error", "hugetlb-cma-on-gpu", "removeipc-enabled"}, ruleIDs(got)); diff != "" {
		t.Fatalf("rules (-want +got):\n%s", diff)
	}
	cma := got[1]
	if cma.Severity != SeverityCritical || cma.Host != "gpu-a-001" || cma.Fleet != "gpu-training" {
		t.Errorf("finding = %+v", cma)
	}
	if cma.Title == "" || cma.Remediation == "" || len(cma.References) == 0 {
		t.Errorf("metadata not filled: %+v", cma)
	}
	if !strings.Contains(cma.Message, "hugetlb_cma=6G on the running and configured kernel command line") {
		t.Errorf("message = %q", cma.Message)
	}
	wantEvidence := []Evidence{
		{Fact: "boot.running.params.hugetlb_cma", Value: "6G", Source: "/proc/cmdline"},
		{Fact: "boot.configured.params.hugetlb_cma", Value: "6G", Source: "/etc/default/grub.d/60-hugetlb.cfg:3"},
		{Fact: "rdma.devices", Value: doc["rdma"].(map[string]any)["devices"]},
		{Fact: "nvidia.driver_version", Value: "535.104.05", Source: "/proc/driver/nvidia/version:1"},
	}
	if diff := cmp.Diff(wantEvidence, cma.Evidence); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"kind": "boot-param", "set": map[string]any{"hugetlb_cma": "0"}}, cma.Fix); diff != "" {
		t.Errorf("fix (-want +got):\n%s", diff)
	}
	if got[0].Evidence[0].Fact != "errors.0" || got[0].Evidence[0].Value.(map[string]any)["collector"] != "sysctl" {
		t.Errorf("collection-error evidence = %+v", got[0].Evidence)
	}
}

func TestEvalHostHealthyNode(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	got, err := e.EvalHost(context.Background(), host{Name: "ok"}.Doc(t), "gpu-training")
	if err != nil || len(got) != 0 {
		t.Fatalf("EvalHost = %v, %v; want no findings", got, err)
	}
}

func TestProfilesSelectRules(t *testing.T) {
	e := newEngine(t, Options{Fleets: map[string]FleetConfig{
		"gpu-training": {Select: ruleProfiles("gpu-training")},
		"web-serving":  {Select: ruleProfiles("web-serving")},
		"gpu-east":     {Select: ruleProfiles("gpu-training")},
		"only-ipc":     {Select: func(r Rule) bool { return r.ID == "removeipc-enabled" }},
		"every-fleet":  {},
	}})
	doc := host{Name: "h", HugetlbCMA: "6G", RemoveIPC: "yes", Errors: 1}.Doc(t)
	for fleet, want := range map[string][]string{
		"gpu-training": {"collection-error", "hugetlb-cma-on-gpu", "removeipc-enabled"},
		"gpu-east":     {"collection-error", "hugetlb-cma-on-gpu", "removeipc-enabled"},
		"web-serving":  {"collection-error"},
		"only-ipc":     {"collection-error", "removeipc-enabled"}, // collection-error runs whatever is selected
		"every-fleet":  {"collection-error"},                      // no Select: as "", whose host is in no fleet
		"":             {"collection-error", "unknown-fleet"},
	} {
		got, err := e.EvalHost(context.Background(), doc, fleet)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, ruleIDs(got)); diff != "" {
			t.Errorf("fleet %q (-want +got):\n%s", fleet, diff)
		}
	}
	if _, err := e.EvalHost(context.Background(), doc, "nope"); !errors.Is(err, ErrUnknownFleet) {
		t.Errorf("unknown fleet: err = %v", err)
	}
	if diff := cmp.Diff([]string{"", "every-fleet", "gpu-east", "gpu-training", "only-ipc", "web-serving"}, e.Fleets()); diff != "" {
		t.Errorf("Fleets (-want +got):\n%s", diff)
	}
}

func TestFleetConfigErrors(t *testing.T) {
	for name, fleets := range map[string]map[string]FleetConfig{
		"empty name":      {"": {}},
		"params not JSON": {"gpu": {Params: map[string]any{"f": func() {}}}},
		"severity level":  {"gpu": {Severity: map[string]string{"removeipc-enabled": "urgent"}}},
		"severity rule":   {"gpu": {Severity: map[string]string{"no-such-rule": "low"}}},
	} {
		if _, err := New(context.Background(), Options{Fleets: fleets}); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestParamsArePerFleet(t *testing.T) {
	e := newEngine(t, Options{Fleets: map[string]FleetConfig{
		"strict":  {Select: ruleProfiles("gpu-training")},
		"relaxed": {Select: ruleProfiles("gpu-training"), Params: map[string]any{"hugetlb_cma_allowed": true}},
		"newer":   {Select: ruleProfiles("gpu-training"), Params: map[string]any{"foll_longterm_min_driver": "530.30.02"}},
		"demoted": {Select: ruleProfiles("gpu-training"), Severity: map[string]string{"hugetlb-cma-on-gpu": "info"}},
	}})
	doc := host{Name: "h", HugetlbCMA: "6G", Driver: "535.104.05", RDMA: 2}.Doc(t)
	for fleet, want := range map[string][]string{
		"strict":  {"hugetlb-cma-on-gpu:critical"},
		"relaxed": nil,
		"newer":   {"hugetlb-cma-on-gpu:high"},
		"demoted": {"hugetlb-cma-on-gpu:info"},
	} {
		got, err := e.EvalHost(context.Background(), doc, fleet)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range got {
			ids = append(ids, f.Rule+":"+f.Severity)
			var wantOverride *SeverityOverride
			if fleet == "demoted" {
				wantOverride = &SeverityOverride{RuleSeverity: "critical", Profile: "demoted"}
			}
			if diff := cmp.Diff(wantOverride, f.SeverityOverride); diff != "" {
				t.Errorf("fleet %s: severity override (-want +got):\n%s", fleet, diff)
			}
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("fleet %s (-want +got):\n%s", fleet, diff)
		}
	}
}

// One engine, many goroutines, every fleet: each result must equal the
// sequential one. Run with -race.
func TestEvalHostConcurrent(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	hosts := []host{
		{Name: "a", HugetlbCMA: "6G", RDMA: 1},
		{Name: "b", RemoveIPC: "yes"},
		{Name: "c", Errors: 3},
		{Name: "d"},
	}
	fleets := []string{"gpu-training", "web-serving", ""}
	want := map[[2]string][]Finding{}
	docs := map[string]map[string]any{}
	for _, h := range hosts {
		docs[h.Name] = h.Doc(t)
		for _, fleet := range fleets {
			f, err := e.EvalHost(context.Background(), docs[h.Name], fleet)
			if err != nil {
				t.Fatal(err)
			}
			want[[2]string{h.Name, fleet}] = f
		}
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				h := hosts[(g+i)%len(hosts)]
				fleet := fleets[(g*7+i)%len(fleets)]
				got, err := e.EvalHost(context.Background(), docs[h.Name], fleet)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want[[2]string{h.Name, fleet}], got); diff != "" {
					t.Errorf("%s in %q differs from the sequential result:\n%s", h.Name, fleet, diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestEvalHostHonoursContext(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.EvalHost(ctx, host{Name: "h"}.Doc(t), "gpu-training"); err == nil {
		t.Error("EvalHost with a cancelled context succeeded")
	}
}

func TestEvalFleetSkew(t *testing.T) {
	e := newEngine(t, Options{Fleets: map[string]FleetConfig{
		"gpu-training": {Select: ruleProfiles("gpu-training")},
		"pinned":       {Select: ruleProfiles("gpu-training"), Params: map[string]any{"baseline": map[string]any{"driver_version": "550.90.07"}}},
	}})
	hosts := []host{
		{Name: "n1", NCCL: []string{"2.20.5"}, Driver: "550.90.07"},
		{Name: "n2", NCCL: []string{"2.20.5"}, Driver: "550.90.07"},
		{Name: "n3", NCCL: []string{"2.20.5"}, Driver: "535.104.05"},
		{Name: "n4", NCCL: []string{"2.18.3", "2.20.5"}, Driver: "535.104.05"},
		{Name: "n5", NCCL: []string{"2.20.5"}, Driver: "535.104.05"},
	}
	var projs []map[string]any
	for _, h := range hosts {
		projs = append(projs, e.Project(h.Doc(t)))
	}

	got, err := e.EvalFleet(context.Background(), "gpu-training", projs)
	if err != nil {
		t.Fatal(err)
	}
	// Drivers: 535 on 3 of 5 hosts is the majority; NCCL: 2.20.5 on 4 of 5.
	type short struct{ Rule, Host, Severity, Basis string }
	var gotShort []short
	for _, f := range got {
		gotShort = append(gotShort, short{f.Rule, f.Host, f.Severity, f.Basis})
	}
	want := []short{
		{"driver-version-skew", "n1", "high", "majority"},
		{"driver-version-skew", "n2", "high", "majority"},
		{"nccl-version-skew", "n4", "high", "majority"},
	}
	if diff := cmp.Diff(want, gotShort); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	nccl := got[2]
	if nccl.Expected != "2.20.5" || nccl.Fleet != "gpu-training" {
		t.Errorf("nccl finding = %+v", nccl)
	}
	// Evidence resolves against the projection, with per-element sources.
	ev := nccl.Evidence[0]
	if ev.Fact != "libraries.nccl" || len(ev.Value.([]any)) != 2 {
		t.Errorf("nccl evidence = %+v", ev)
	}
	if src := got[0].Evidence[0].Source; src != "/proc/driver/nvidia/version:1" {
		t.Errorf("driver evidence source = %q", src)
	}

	// A declared baseline wins over the majority.
	got, err = e.EvalFleet(context.Background(), "pinned", projs)
	if err != nil {
		t.Fatal(err)
	}
	var drivers []string
	for _, f := range got {
		if f.Rule == "driver-version-skew" {
			drivers = append(drivers, f.Host+":"+f.Basis)
		}
	}
	if diff := cmp.Diff([]string{"n3:baseline", "n4:baseline", "n5:baseline"}, drivers); diff != "" {
		t.Errorf("baseline findings (-want +got):\n%s", diff)
	}

	if _, err := e.EvalFleet(context.Background(), "gpu-training", append(projs, projs[0])); err == nil {
		t.Error("duplicate host names accepted")
	}
}

func TestProject(t *testing.T) {
	e := &Engine{}
	e.setFleetFacts([]string{
		"libraries.nccl",
		"libraries.nccl.*.version", // covered by the line above
		"sysctl.running.vm.max_map_count",
		"boot.*.params.hugetlb_cma",
		"rdma.devices.*.driver",
	})
	doc := host{Name: "h", Labels: map[string]string{"rack": "r1"}, HugetlbCMA: "6G", NCCL: []string{"2.20.5"}, RDMA: 2}.Doc(t)
	got := e.Project(doc)
	b, _ := json.Marshal(got)
	want := `{"boot":{"configured":{"params":{"hugetlb_cma":"6G"}},"running":{"params":{"hugetlb_cma":"6G"}}},` +
		`"host":"h","labels":{"rack":"r1"},` +
		`"libraries":{"nccl":[{"how":"file-name","kind":"system","path":"/usr/lib/libnccl.so.2.20.5","source":"/usr/lib/libnccl.so.2.20.5","version":"2.20.5"}]},` +
		`"rdma":{"devices":{"mlx5_0":{"driver":"mlx5_core"},"mlx5_1":{"driver":"mlx5_core"}}},` +
		`"sources":{"boot.configured.params.hugetlb_cma":"/etc/default/grub.d/60-hugetlb.cfg:3","boot.running":"/proc/cmdline",` +
		`"libraries.nccl":"/usr/lib/libnccl.so.2.20.5","sysctl.running.vm.max_map_count":"/proc/sys/vm/max_map_count"},` +
		`"sysctl":{"running":{"vm.max_map_count":"262144"}}}`
	if string(b) != want {
		t.Errorf("projection:\n got %s\nwant %s", b, want)
	}
}

func TestEvidenceSourceFallsBackToAncestor(t *testing.T) {
	doc := map[string]any{
		"boot":    map[string]any{"running": map[string]any{"params": map[string]any{"hugetlb_cma": "6G"}}},
		"sysctl":  map[string]any{"running": map[string]any{"vm.max_map_count": "65530"}},
		"sources": map[string]any{"boot.running": "/proc/cmdline", "sysctl.running.vm.max_map_count": "/proc/sys/vm/max_map_count"},
	}
	for fact, want := range map[string]Evidence{
		"boot.running.params.hugetlb_cma": {Fact: "boot.running.params.hugetlb_cma", Value: "6G", Source: "/proc/cmdline"},
		"sysctl.running.vm.max_map_count": {Fact: "sysctl.running.vm.max_map_count", Value: "65530", Source: "/proc/sys/vm/max_map_count"},
		"rdma.devices":                    {Fact: "rdma.devices"},
	} {
		if diff := cmp.Diff(want, evidence(doc, fact)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", fact, diff)
		}
	}
}

// Every embedded rule has complete metadata, and the set of ids is the one
// the catalog (testdata/catalog-ids.txt, the ids docs/rules.md publishes) lists: every rule is in the catalog, and
// every catalog entry has a rule.
func TestBuiltinRulesMetadata(t *testing.T) {
	e := newEngine(t, Options{})
	var ids []string
	for _, r := range e.Rules() {
		ids = append(ids, r.ID)
		if !r.Builtin || !strings.HasPrefix(r.Location, "policies/lib/") {
			t.Errorf("%s: Builtin=%v Location=%s", r.ID, r.Builtin, r.Location)
		}
		if r.Title == "" || r.Description == "" || r.Remediation == "" || len(r.References) == 0 ||
			len(r.Profiles) == 0 || len(r.Facts) == 0 || SeverityRank(r.Severity) == 0 {
			t.Errorf("%s: incomplete metadata: %+v", r.ID, r)
		}
		for _, ref := range r.References {
			if !strings.HasPrefix(ref, "https://") {
				t.Errorf("%s: reference %q is not an https URL", r.ID, ref)
			}
		}
	}
	catalog, err := os.ReadFile("testdata/catalog-ids.txt")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, line := range strings.Split(string(catalog), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			known[line] = true
		}
	}
	for _, id := range ids {
		if !known[id] {
			t.Errorf("rule id %q is not in the hazard catalog (testdata/catalog-ids.txt)", id)
		}
	}
	// The library implements the whole catalog.
	for id := range known {
		if !slices.Contains(ids, id) {
			t.Errorf("catalog id %q (testdata/catalog-ids.txt) has no built-in rule", id)
		}
	}
	if len(ids) != len(slices.Compact(slices.Sorted(slices.Values(ids)))) {
		t.Errorf("rule ids repeat: %v", ids)
	}
	r, ok := e.Rule("nccl-version-skew")
	if !ok || r.Scope != ScopeFleet || r.Ref != "data.fleetaudit.fleet_rules.versions.nccl_version_skew" {
		t.Errorf("Rule(nccl-version-skew) = %+v, %v", r, ok)
	}
}

// Evidence a built-in rule cites lies within the facts its METADATA
// declares, so projections and `explain` stay truthful.
func TestBuiltinEvidenceIsDeclared(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	check := func(fs []Finding) {
		for _, f := range fs {
			r, _ := e.Rule(f.Rule)
			for _, ev := range f.Evidence {
				if !slices.ContainsFunc(r.Facts, func(p string) bool { return covers(splitPath(p), splitPath(ev.Fact)) }) {
					t.Errorf("%s cites %s, not among its facts %v", f.Rule, ev.Fact, r.Facts)
				}
			}
		}
	}
	hosts := []host{
		{Name: "a", HugetlbCMA: "6G", RDMA: 1, Driver: "535.104.05", RemoveIPC: "yes", Errors: 2, NCCL: []string{"2.18.3"}},
		{Name: "b", NCCL: []string{"2.20.5"}, Driver: "550.54.14"},
	}
	var projs []map[string]any
	for _, h := range hosts {
		for _, fleet := range []string{"gpu-training", ""} {
			fs, err := e.EvalHost(context.Background(), h.Doc(t), fleet)
			if err != nil {
				t.Fatal(err)
			}
			check(fs)
		}
		projs = append(projs, e.Project(h.Doc(t)))
	}
	fs, err := e.EvalFleet(context.Background(), "gpu-training", projs)
	if err != nil || len(fs) == 0 {
		t.Fatalf("EvalFleet = %v, %v", fs, err)
	}
	check(fs)
}

const userRule = `# User rules for the site.
package fleetaudit.rules.site

# METADATA
# title: Host lacks an owner label
# description: Every host names the team that owns it.
# related_resources:
# - ref: https://example.com/runbook/owners
# custom:
#   id: owner-label-missing
#   severity: low
#   profiles: [all]
#   remediation: Label the host with its owner.
#   facts: [labels]
owner_label_missing contains {"msg": sprintf("no %s label", [data.site.label]), "evidence": ["labels"]} if {
	not input.labels[data.site.label]
}
`

func TestUserPolicyDirAddsRule(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "site/owner.rego", userRule)
	// Data files land at the path of their directory: data.site.label.
	writeFile(t, dir, "site/data.json", `{"label": "team"}`)
	// A test beside the rule is not evaluated (it would fail to compile here).
	writeFile(t, dir, "site/owner_test.rego", "package x\ntest_x if { undefined_function(1) }\n")
	e := newEngine(t, Options{PolicyDirs: []string{dir}, Fleets: gpuFleets()})

	r, ok := e.Rule("owner-label-missing")
	if !ok || r.Builtin || r.Severity != SeverityLow || !strings.HasSuffix(r.Location, "site/owner.rego:4") {
		t.Fatalf("Rule = %+v, %v", r, ok)
	}
	got, err := e.EvalHost(context.Background(), host{Name: "h"}.Doc(t), "gpu-training")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Rule != "owner-label-missing" || got[0].Message != "no team label" {
		t.Fatalf("findings = %+v", got)
	}
	got, _ = e.EvalHost(context.Background(), host{Name: "h", Labels: map[string]string{"team": "ml"}}.Doc(t), "gpu-training")
	if len(got) != 0 {
		t.Errorf("labelled host: findings = %+v", got)
	}
}

func TestUserPolicyLoadErrorsNameFileAndLine(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		want string // regexp, after the file name
	}{
		"http.send": {
			src:  "package fleetaudit.rules.x\n\nleak if {\n\thttp.send({\"method\": \"get\", \"url\": \"https://example.com\"})\n}\n",
			want: `p\.rego:4: rego_type_error: undefined function http\.send \(fleetaudit policies run without`,
		},
		"net.lookup_ip_addr": {
			src:  "package fleetaudit.rules.x\n\nips := net.lookup_ip_addr(\"example.com\")\n",
			want: `p\.rego:3: rego_type_error: undefined function net\.lookup_ip_addr`,
		},
		"opa.runtime": {
			src:  "package fleetaudit.rules.x\n\nenv := opa.runtime().env\n",
			want: `p\.rego:3: rego_type_error: undefined function opa\.runtime`,
		},
		"syntax error": {
			src:  "package fleetaudit.rules.x\n\nbroken if {\n\tinput.x ==\n}\n",
			want: `p\.rego:\d+: rego_parse_error`,
		},
		"rego v0 syntax": {
			src:  "package fleetaudit.rules.x\n\ndeny[msg] { msg := \"x\" }\n",
			want: `p\.rego:3: rego_parse_error`,
		},
		"missing metadata": {
			src:  "package fleetaudit.rules.x\n\nthing contains {\"msg\": \"x\"} if input.x\n",
			want: `p\.rego:3: rule data\.fleetaudit\.rules\.x\.thing has no METADATA`,
		},
		"incomplete metadata": {
			src: "package fleetaudit.rules.x\n\n# METADATA\n# title: T\n# custom:\n#   id: other-name\n#   severity: urgent\n" +
				"thing contains {\"msg\": \"x\"} if input.x\n",
			want: `p\.rego:3: METADATA of data\.fleetaudit\.rules\.x\.thing: description is missing; related_resources is missing; ` +
				`custom\.id "other-name" must be the rule name in kebab-case: "thing"; custom\.severity "urgent" is not one of`,
		},
		"duplicate id": {
			src: "package fleetaudit.rules.x\n\n# METADATA\n# title: t\n# description: d\n# related_resources: [{ref: \"https://example.com\"}]\n" +
				"# custom: {id: removeipc-enabled, severity: low, profiles: [all], remediation: r, facts: [host]}\n" +
				"removeipc_enabled contains {\"msg\": \"x\"} if input.x\n",
			want: `p\.rego:3: rule id removeipc-enabled is already used by data\.fleetaudit\.rules\.logind\.removeipc_enabled \(policies/lib/rules/logind\.rego:\d+\)`,
		},
		"fact path no snapshot has": {
			src: "package fleetaudit.rules.x\n\n# METADATA\n# title: t\n# description: d\n# related_resources: [{ref: \"https://example.com\"}]\n" +
				"# custom: {id: thing, severity: low, profiles: [all], remediation: r, facts: [kernel.release, bot.running, sysctl.runing]}\n" +
				"thing contains {\"msg\": \"x\"} if input.x\n",
			want: `p\.rego:3: METADATA of data\.fleetaudit\.rules\.x\.thing: custom\.facts: fact path "bot\.running": no snapshot section "bot" .*; ` +
				`custom\.facts: fact path "sysctl\.runing" names nothing a snapshot holds`,
		},
		"id on a complete rule": {
			src: "package fleetaudit.rules.x\n\n# METADATA\n# title: T\n# custom:\n#   id: thing\n" +
				"thing := {\"msg\": \"x\"}\n",
			want: `p\.rego:3: rule thing has custom\.id but is not a finding rule`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "p.rego", tc.src)
			_, err := New(context.Background(), Options{PolicyDirs: []string{dir}})
			if err == nil {
				t.Fatal("New succeeded")
			}
			if !regexp.MustCompile(regexp.QuoteMeta(dir) + "/" + tc.want).MatchString(err.Error()) {
				t.Errorf("error does not match %q:\n%v", tc.want, err)
			}
		})
	}
}

func TestUserDataReservedKeys(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "d.json", `{"fleetaudit": {"params": {"x": 1}}}`)
	_, err := New(context.Background(), Options{PolicyDirs: []string{dir}})
	if err == nil || !strings.Contains(err.Error(), "data.fleetaudit is reserved") {
		t.Errorf("err = %v", err)
	}
	if _, err := New(context.Background(), Options{PolicyDirs: []string{dir + "/missing"}}); err == nil {
		t.Error("a missing policy directory was accepted")
	}
}

func TestMalformedFindingsAreErrors(t *testing.T) {
	rule := func(id, body string) string {
		name := strings.ReplaceAll(id, "-", "_")
		return "\n# METADATA\n# title: t\n# description: d\n# related_resources: [{ref: \"https://example.com\"}]\n" +
			"# custom: {id: " + id + ", severity: low, profiles: [all], remediation: r, facts: [host]}\n" +
			name + " contains f if { " + body + " }\n"
	}
	dir := t.TempDir()
	writeFile(t, dir, "bad.rego", "package fleetaudit.rules.bad\n"+
		rule("not-an-object", `f := "oops"`)+
		rule("no-msg", `f := {"evidence": []}`)+
		rule("bad-severity", `f := {"msg": "m", "severity": "urgent"}`)+
		rule("bad-evidence", `f := {"msg": "m", "evidence": "x"}`))
	writeFile(t, dir, "fleet.rego", "package fleetaudit.fleet_rules.bad\n"+rule("no-host", `f := {"msg": "m"}`))
	e := newEngine(t, Options{PolicyDirs: []string{dir}})

	_, err := e.EvalHost(context.Background(), host{Name: "h"}.Doc(t), "")
	for _, want := range []string{
		"rule not-an-object", "rule no-msg", "rule bad-severity", "rule bad-evidence",
		`finding severity urgent is not one of`, "bad.rego:",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("EvalHost error lacks %q: %v", want, err)
		}
	}
	_, err = e.EvalFleet(context.Background(), "", []map[string]any{{"host": "h"}})
	if err == nil || !strings.Contains(err.Error(), `rule no-host`) {
		t.Errorf("EvalFleet error = %v", err)
	}
}
