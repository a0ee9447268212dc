package fleets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/viper"

	"github.com/fleetaudit/fleetaudit/policies"
)

// writeDir writes files into a new temporary directory and returns it.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustLoad(t *testing.T, builtin bool, dirs ...string) *Set {
	t.Helper()
	s, err := Load(builtin, dirs...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

func mustResolve(t *testing.T, s *Set, name string) *Profile {
	t.Helper()
	p, err := s.Resolve(name)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", name, err)
	}
	return p
}

func TestBuiltins(t *testing.T) {
	s := mustLoad(t, true)
	if diff := cmp.Diff([]string{"common", "gpu-training", "web-serving"}, s.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpu-training", "web-serving"}, s.MatchOrder()); diff != "" {
		t.Errorf("MatchOrder (-want +got):\n%s", diff)
	}
	ignoreText := cmpopts.IgnoreFields(Profile{}, "Description")
	tests := []struct {
		name string
		want *Profile
	}{
		{"common", &Profile{
			Name:   "common",
			Source: "builtin/common.yaml",
			Rules:  Rules{Include: []string{"tag:all", "tag:common"}},
			Params: map[string]any{
				"nofile_min":                  65536,
				"max_map_count_min":           262144,
				"forbidden_boot_params":       []any{},
				"forbidden_boot_param_values": map[string]any{},
			},
		}},
		{"gpu-training", &Profile{
			Name:     "gpu-training",
			Source:   "builtin/gpu-training.yaml",
			Includes: []string{"common"},
			Match: Match{
				Groups:    []string{"gpu", "gpu-training"},
				Labels:    map[string]string{"fleetaudit.io/fleet": "gpu-training"},
				Hostnames: []string{"gpu-*"},
				Facts:     Facts{GPUs: want(true)},
			},
			Rules: Rules{Include: []string{"tag:all", "tag:gpu-training"}},
			Params: map[string]any{
				"nofile_min":                  65536,
				"max_map_count_min":           262144,
				"forbidden_boot_params":       []any{},
				"forbidden_boot_param_values": map[string]any{},
				"memlock_min_kb":              "unlimited",
				"nccl_min_stack_safe":         "2.30.4",
				"efa_devices_by_instance_type": map[string]any{
					"p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16, "p4d.24xlarge": 4,
				},
				"job_user": "",
			},
		}},
		{"web-serving", &Profile{
			Name:     "web-serving",
			Source:   "builtin/web-serving.yaml",
			Includes: []string{"common"},
			Match: Match{
				Groups:    []string{"web"},
				Labels:    map[string]string{"fleetaudit.io/fleet": "web-serving"},
				Hostnames: []string{"web-*"},
			},
			Rules: Rules{Include: []string{"tag:all", "tag:web-serving"}},
			Params: map[string]any{
				"nofile_min":                  65536,
				"max_map_count_min":           262144,
				"forbidden_boot_params":       []any{},
				"forbidden_boot_param_values": map[string]any{},
				"somaxconn_min":               4096,
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustResolve(t, s, tt.name)
			if diff := cmp.Diff(tt.want, got, ignoreText); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
			if got.Description == "" {
				t.Error("built-in profile has no description")
			}
		})
	}
}

func TestResolveReturnsCopy(t *testing.T) {
	s := mustLoad(t, true)
	p := mustResolve(t, s, "gpu-training")
	p.Params["efa_devices_by_instance_type"].(map[string]any)["p5.48xlarge"] = 0
	p.Match.Labels["x"] = "y"
	p.Rules.Include[0] = "changed"
	again := mustResolve(t, s, "gpu-training")
	if diff := cmp.Diff(mustResolve(t, mustLoad(t, true), "gpu-training"), again); diff != "" {
		t.Errorf("changing a resolved profile changed the set (-want +got):\n%s", diff)
	}
}

func TestResolveUserProfiles(t *testing.T) {
	dir := writeDir(t, map[string]string{
		// Extends the built-in: deep-merges a param table, replaces a list,
		// adds an exclude and a severity override.
		"gpu-inference.yml": `
description: inference nodes
includes: [gpu-training]
match:
  hostnames: ["gpu-inf-*"]
rules:
  include: [my-custom-rule]
  exclude: ["tag:gpu-training-only", stack-unlimited]
  severity: {numa-balancing-enabled: info}
params:
  forbidden_boot_params: [hugetlb_cma]
  efa_devices_by_instance_type: {p6.48xlarge: 16, p4d.24xlarge: 0}
  baseline: {nccl_version: "2.21.5", driver_version: "550.90.07", kernel_release: "5.15.0-1051-aws"}
  team_slack: "#ml-infra"
`,
		// Diamond: both includes bring common, which merges once, first.
		"diamond.yaml": "includes: [gpu-training, web-serving]\nparams: {somaxconn_min: 1024}\n",
		// No rules section and no includes: runs the "all" rules and its own.
		"bare.yaml": "match: {groups: [bare]}\n",
	})
	s := mustLoad(t, true, dir)
	tests := []struct {
		name string
		want *Profile
	}{
		{"gpu-inference", &Profile{
			Name:        "gpu-inference",
			Description: "inference nodes",
			Source:      filepath.Join(dir, "gpu-inference.yml"),
			Includes:    []string{"common", "gpu-training"},
			Match:       Match{Hostnames: []string{"gpu-inf-*"}},
			Rules: Rules{
				Include:  []string{"tag:all", "tag:gpu-training", "my-custom-rule", "tag:gpu-inference"},
				Exclude:  []string{"tag:gpu-training-only", "stack-unlimited"},
				Severity: map[string]string{"numa-balancing-enabled": "info"},
			},
			Params: map[string]any{
				"nofile_min":                  65536,
				"max_map_count_min":           262144,
				"forbidden_boot_params":       []any{"hugetlb_cma"},
				"forbidden_boot_param_values": map[string]any{},
				"memlock_min_kb":              "unlimited",
				"nccl_min_stack_safe":         "2.30.4",
				"efa_devices_by_instance_type": map[string]any{
					"p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16, "p4d.24xlarge": 0, "p6.48xlarge": 16,
				},
				"job_user": "",
				"baseline": map[string]any{
					"nccl_version": "2.21.5", "driver_version": "550.90.07", "kernel_release": "5.15.0-1051-aws",
				},
				"team_slack": "#ml-infra",
			},
		}},
		{"diamond", &Profile{
			Name:     "diamond",
			Source:   filepath.Join(dir, "diamond.yaml"),
			Includes: []string{"common", "gpu-training", "web-serving"},
			Rules:    Rules{Include: []string{"tag:all", "tag:gpu-training", "tag:web-serving", "tag:diamond"}},
			Params: map[string]any{
				"nofile_min":                  65536,
				"max_map_count_min":           262144,
				"forbidden_boot_params":       []any{},
				"forbidden_boot_param_values": map[string]any{},
				"memlock_min_kb":              "unlimited",
				"nccl_min_stack_safe":         "2.30.4",
				"efa_devices_by_instance_type": map[string]any{
					"p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16, "p4d.24xlarge": 4,
				},
				"job_user":      "",
				"somaxconn_min": 1024,
			},
		}},
		{"bare", &Profile{
			Name:   "bare",
			Source: filepath.Join(dir, "bare.yaml"),
			Match:  Match{Groups: []string{"bare"}},
			Rules:  Rules{Include: []string{"tag:all", "tag:bare"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, mustResolve(t, s, tt.name)); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
	// File-name order; diamond has no match section.
	if diff := cmp.Diff([]string{"bare", "gpu-inference", "gpu-training", "web-serving"}, s.MatchOrder()); diff != "" {
		t.Errorf("MatchOrder (-want +got):\n%s", diff)
	}
}

func TestUserOverridesBuiltin(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"10-site.yaml": `
name: gpu-training
includes: [common]
match: {groups: [trainers]}
params: {memlock_min_kb: 67108864}
`,
	})
	s := mustLoad(t, true, dir)
	got := mustResolve(t, s, "gpu-training")
	want := &Profile{
		Name:     "gpu-training",
		Source:   filepath.Join(dir, "10-site.yaml"),
		Includes: []string{"common"},
		Match:    Match{Groups: []string{"trainers"}},
		Rules:    Rules{Include: []string{"tag:all", "tag:gpu-training"}},
		Params: map[string]any{
			"nofile_min":                  65536,
			"max_map_count_min":           262144,
			"forbidden_boot_params":       []any{},
			"forbidden_boot_param_values": map[string]any{},
			"memlock_min_kb":              67108864,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("override replaces the built-in entirely (-want +got):\n%s", diff)
	}
	// The built-in's gpu-* hostname match went with it.
	if name, ok := s.Match(HostFacts{Name: "gpu-a-001"}); ok {
		t.Errorf("Match(gpu-a-001) = %q after override, want no match", name)
	}
	if diff := cmp.Diff([]string{"gpu-training", "web-serving"}, s.MatchOrder()); diff != "" {
		t.Errorf("MatchOrder (-want +got):\n%s", diff)
	}

	// Without built-ins, an include of common has nothing to resolve to.
	if _, err := Load(false, dir); err == nil || !strings.Contains(err.Error(), `includes unknown profile "common"`) {
		t.Errorf("Load(false) = %v, want an unknown include error", err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // every substring must appear in the error
	}{
		{"unknown top-level key",
			map[string]string{"a.yaml": "name: a\nmatch: {groups: [a]}\nparam: {x: 1}\n"},
			[]string{"a.yaml: invalid fleet profile: line 3: unknown key \"param\" in the top level (known: description, includes, match, name, params, rules)"}},
		{"unknown nested key",
			map[string]string{"a.yaml": "rules:\n  include: [x]\n  disable: [y]\n"},
			[]string{"a.yaml", "line 3: unknown key \"disable\" in rules (known: exclude, include, severity)"}},
		{"unknown key under match",
			map[string]string{"a.yaml": "match:\n  hostname: [a-*]\n"},
			[]string{"a.yaml", `line 2: unknown key "hostname" in match (known: facts, groups, hostnames, labels)`}},
		{"bad yaml",
			map[string]string{"a.yaml": "match: {groups: [a\n"},
			[]string{"a.yaml: invalid fleet profile: yaml: line"}},
		{"tab indentation",
			map[string]string{"a.yaml": "match:\n\tgroups: [a]\n"},
			[]string{"a.yaml: invalid fleet profile", "tab"}},
		{"wrong type",
			map[string]string{"a.yaml": "match: {groups: gpu}\n"},
			[]string{"a.yaml: invalid fleet profile", "line 1", "cannot unmarshal"}},
		{"duplicate key",
			map[string]string{"a.yaml": "name: a\nname: b\n"},
			[]string{"a.yaml", "already defined"}},
		{"empty",
			map[string]string{"a.yaml": "# nothing\n"},
			[]string{"a.yaml: invalid fleet profile: empty file"}},
		{"not a mapping",
			map[string]string{"a.yaml": "- name: a\n"},
			[]string{"a.yaml", "want a mapping"}},
		{"two documents",
			map[string]string{"a.yaml": "name: a\n---\nname: b\n"},
			[]string{"a.yaml", "line 2: more than one YAML document"}},
		{"include cycle",
			map[string]string{
				"a.yaml": "includes: [b]\n",
				"b.yaml": "includes: [c]\n",
				"c.yaml": "includes: [a]\n",
			},
			[]string{"a.yaml: invalid fleet profile: include cycle: a -> b -> c -> a",
				"b.yaml: invalid fleet profile: include cycle: b -> c -> a -> b"}},
		{"self include",
			map[string]string{"a.yaml": "includes: [a]\n"},
			[]string{"a.yaml", `includes: "a" includes itself`}},
		{"unknown include",
			map[string]string{"a.yaml": "includes: [common, gpu-trainng]\n"},
			[]string{"a.yaml: invalid fleet profile: a includes unknown profile \"gpu-trainng\""}},
		{"unknown include deeper",
			map[string]string{"a.yaml": "includes: [b]\n", "b.yaml": "includes: [nope]\n"},
			[]string{"a.yaml: invalid fleet profile: b includes unknown profile \"nope\""}},
		{"duplicate name",
			map[string]string{"a.yaml": "name: x\n", "b.yml": "name: x\n"},
			[]string{"b.yml: invalid fleet profile: profile \"x\" is already defined in", "a.yaml"}},
		{"bad values",
			map[string]string{"a.yaml": `
name: Bad_Name
match: {hostnames: ["gpu-[a"]}
rules:
  include: ["tag:", "a:b"]
  severity: {hugetlb-cma-on-gpu: urgent}
params:
  memlock_min_kb: 64k
  nofile_min: -1
  baseline: {driver_version: 550.90}
  forbidden_boot_params: hugetlb_cma
  efa_devices_by_instance_type: {p5.48xlarge: many}
  CamelCase: 1
`},
			[]string{
				`name "Bad_Name"`,
				`match.hostnames: "gpu-[a" is not a valid glob`,
				`rules.include: "tag:": empty selector`,
				`rules.include: "a:b": only "tag:" selectors may contain a colon`,
				`rules.severity.hugetlb-cma-on-gpu: "urgent" is not one of`,
				`params: "CamelCase" is not a snake_case name`,
				`params.memlock_min_kb: want a number of KiB or "unlimited"`,
				`params.nofile_min: want a non-negative integer, got integer -1`,
				`params.baseline: driver_version: want a quoted version string, got number 550.9`,
				`params.forbidden_boot_params: want a list of strings, got string "hugetlb_cma"`,
				`params.efa_devices_by_instance_type: p5.48xlarge: want a non-negative integer, got string "many"`,
			}},
		{"non-string param keys",
			map[string]string{"a.yaml": "params: {efa_devices_by_instance_type: {1: 2}}\n"},
			[]string{"a.yaml", "params.efa_devices_by_instance_type: keys must be strings"}},
		{"every bad file is reported",
			map[string]string{"a.yaml": "bogus: 1\n", "b.yaml": "also: 2\n", "ok.yaml": "name: ok\n"},
			[]string{`a.yaml: invalid fleet profile: line 1: unknown key "bogus"`, `b.yaml: invalid fleet profile: line 1: unknown key "also"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, tt.files)
			s, err := Load(true, dir)
			if err == nil {
				t.Fatalf("Load succeeded with profiles %v, want an error", s.Names())
			}
			if !errors.Is(err, ErrInvalidProfile) {
				t.Errorf("error does not wrap ErrInvalidProfile: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
}

func TestLoadDirectories(t *testing.T) {
	if _, err := Load(true, filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: Load = %v, want ErrNotExist", err)
	}
	// Other files, hidden files and subdirectories are not profiles.
	dir := writeDir(t, map[string]string{
		"README.md":   "# not a profile",
		".draft.yaml": "bogus: 1",
		"a.yaml":      "match: {groups: [a]}",
	})
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := mustLoad(t, false, dir)
	if diff := cmp.Diff([]string{"a"}, s.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	// Directories are read in the order given.
	dir2 := writeDir(t, map[string]string{"0-b.yaml": "name: b\nmatch: {groups: [a]}"})
	s = mustLoad(t, false, dir, dir2)
	if name, _ := s.Match(HostFacts{Name: "h", Groups: []string{"a"}}); name != "a" {
		t.Errorf("Match = %q, want a (first directory first)", name)
	}
	if _, err := s.Resolve("nope"); !errors.Is(err, policies.ErrUnknownFleet) {
		t.Errorf("Resolve(nope) = %v, want policies.ErrUnknownFleet", err)
	}
}

func TestMatch(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"10-gpu-inference.yaml": `
name: gpu-inference
includes: [gpu-training]
match:
  hostnames: ["gpu-inf-*"]
  labels: {node.kubernetes.io/instance-type: g5.12xlarge}
`,
		"20-batch.yaml": `
name: batch
includes: [common]
match:
  labels: {team: batch, node.kubernetes.io/instance-type: "*"}
`,
		// Even with a match section, common is never a host's fleet by matching.
		"common.yaml":     "match: {hostnames: ['*']}\n",
		"zz-nomatch.yaml": "includes: [common]\n",
	})
	s := mustLoad(t, true, dir)
	tests := []struct {
		name string
		host HostFacts
		want string // "" = no match
	}{
		{"group gpu", HostFacts{Name: "node-17", Groups: []string{"rack12", "gpu"}}, "gpu-training"},
		{"group gpu-training", HostFacts{Name: "node-17", Groups: []string{"gpu-training"}}, "gpu-training"},
		{"group web", HostFacts{Name: "node-17", Groups: []string{"web"}}, "web-serving"},
		{"group names are exact", HostFacts{Name: "node-17", Groups: []string{"GPU", "webs"}}, ""},
		{"fleet label", HostFacts{Name: "node-17", Labels: map[string]string{"fleetaudit.io/fleet": "web-serving"}}, "web-serving"},
		{"label value must be exact", HostFacts{Name: "node-17", Labels: map[string]string{"fleetaudit.io/fleet": "Web-Serving"}}, ""},
		{"dotted label key", HostFacts{Name: "node-17", Labels: map[string]string{"node.kubernetes.io/instance-type": "g5.12xlarge"}}, "gpu-inference"},
		{"every label of a selector must match", HostFacts{Name: "node-17", Labels: map[string]string{"team": "batch"}}, ""},
		{"star means present", HostFacts{Name: "node-17", Labels: map[string]string{"team": "batch", "node.kubernetes.io/instance-type": "m7i.large"}}, "batch"},
		{"hostname glob", HostFacts{Name: "gpu-a-001"}, "gpu-training"},
		{"hostname glob ignores case", HostFacts{Name: "GPU-A-001.example.com"}, "gpu-training"},
		{"web hostname", HostFacts{Name: "web-01"}, "web-serving"},
		{"user profile first", HostFacts{Name: "gpu-inf-003"}, "gpu-inference"},
		{"first profile wins over a later group match", HostFacts{Name: "gpu-inf-003", Groups: []string{"web"}}, "gpu-inference"},
		{"built-ins by name", HostFacts{Name: "web-gpu-1", Groups: []string{"gpu", "web"}}, "gpu-training"},
		{"nothing matches", HostFacts{Name: "db-01", Groups: []string{"db"}, Labels: map[string]string{"rack": "r1"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.Match(tt.host)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("Match = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
	if diff := cmp.Diff([]string{"gpu-inference", "batch", "gpu-training", "web-serving"}, s.MatchOrder()); diff != "" {
		t.Errorf("MatchOrder (-want +got):\n%s", diff)
	}
}

func TestFleetOf(t *testing.T) {
	s := mustLoad(t, true)
	tests := []struct {
		name    string
		host    HostFacts
		want    string
		wantErr string
	}{
		{"inventory wins over matching", HostFacts{Name: "gpu-a-001", Fleet: "web-serving"}, "web-serving", ""},
		{"inventory may name common", HostFacts{Name: "x", Fleet: "common"}, "common", ""},
		{"matched", HostFacts{Name: "gpu-a-001"}, "gpu-training", ""},
		{"inventory names an unknown fleet", HostFacts{Name: "gpu-a-001", Fleet: "gpu-trainng"},
			"", `host gpu-a-001: inventory names fleet "gpu-trainng": unknown fleet (profiles: common, gpu-training, web-serving)`},
		{"no match", HostFacts{Name: "db-01", Groups: []string{"db"}},
			"", "host db-01: no fleet profile matches it (groups [db], 0 labels): unknown fleet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.FleetOf(tt.host)
			if tt.wantErr != "" {
				if !errors.Is(err, policies.ErrUnknownFleet) || err.Error() != tt.wantErr {
					t.Errorf("FleetOf error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("FleetOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	s := mustLoad(t, true)
	gpu := mustResolve(t, s, "gpu-training")
	web := mustResolve(t, s, "web-serving")
	custom := &Profile{Name: "custom", Rules: Rules{
		Include: []string{"tag:all", "nccl-*", "tag:gpu-*", "pod-shm-missing"},
		Exclude: []string{"nccl-debug-env", "tag:experimental", "pod-*"},
	}}
	rule := func(id string, profiles ...string) policies.Rule { return policies.Rule{ID: id, Profiles: profiles} }
	tests := []struct {
		name string
		p    *Profile
		r    policies.Rule
		want bool
	}{
		{"gpu: all-fleet rule", gpu, rule("nofile-too-low", "all"), true},
		{"gpu: gpu rule", gpu, rule("hugetlb-cma-on-gpu", "gpu-training"), true},
		{"gpu: web rule", gpu, rule("thp-always", "web-serving"), false},
		{"gpu: rule for both", gpu, rule("x", "web-serving", "gpu-training"), true},
		{"gpu: rule with no profiles", gpu, rule("orphan"), false},
		{"web: all-fleet rule", web, rule("collection-error", "all"), true},
		{"web: web rule", web, rule("mitigations-off", "web-serving"), true},
		{"web: gpu rule", web, rule("memlock-too-low", "gpu-training"), false},
		{"id glob", custom, rule("nccl-version-skew"), true},
		{"exclude by id beats include by glob", custom, rule("nccl-debug-env", "all"), false},
		{"tag glob over profiles", custom, rule("efa-nccl-env", "gpu-training"), true},
		{"exclude by tag", custom, rule("r", "all", "experimental"), false},
		{"exclude glob beats explicit include", custom, rule("pod-shm-missing"), false},
		{"nothing includes it", custom, rule("thp-always", "web-serving"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Selects(tt.r); got != tt.want {
				t.Errorf("Selects(%q, %v) = %v, want %v", tt.r.ID, tt.r.Profiles, got, tt.want)
			}
		})
	}
}

func TestExcludes(t *testing.T) {
	p := &Profile{Rules: Rules{Include: []string{"tag:gpu-training", "tag:all"}, Exclude: []string{"numa-*"}}}
	for _, tc := range []struct {
		id       string
		profiles []string
		want     bool
	}{
		{"numa-balancing-enabled", []string{"gpu-training"}, true},
		{"hugetlb-cma-on-gpu", []string{"gpu-training"}, false},
		{"numa-web-thing", []string{"web-serving"}, false}, // never included: not switched off
	} {
		if got := p.Excludes(policies.Rule{ID: tc.id, Profiles: tc.profiles}); got != tc.want {
			t.Errorf("Excludes(%s) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestSeverity(t *testing.T) {
	p := &Profile{Rules: Rules{Severity: map[string]string{"iommu-translating": "low"}}}
	if got := p.Severity("iommu-translating", "medium"); got != "low" {
		t.Errorf("override: got %q", got)
	}
	if got := p.Severity("thp-always", "medium"); got != "medium" {
		t.Errorf("default: got %q", got)
	}
}

// TestViperWouldMangleProfileKeys records why profiles are decoded with
// yaml.v3 and not viper: viper splits keys on dots and lowercases them, and
// in a profile both are data (label keys, instance types). If this starts
// failing, viper changed and the choice can be revisited.
func TestViperWouldMangleProfileKeys(t *testing.T) {
	src := "match:\n  labels:\n    node.kubernetes.io/instance-type: p5.48xlarge\n    Team: ML\n"
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	labels, _ := v.AllSettings()["match"].(map[string]any)["labels"].(map[string]any)
	if _, nested := labels["node"]; !nested {
		t.Errorf("viper kept the dotted key: %v", labels)
	}
	if _, lowered := labels["team"]; !lowered {
		t.Errorf("viper kept the key's case: %v", labels)
	}

	dir := writeDir(t, map[string]string{"a.yaml": src})
	p := mustResolve(t, mustLoad(t, false, dir), "a")
	want := map[string]string{"node.kubernetes.io/instance-type": "p5.48xlarge", "Team": "ML"}
	if diff := cmp.Diff(want, p.Match.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}
