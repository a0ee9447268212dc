package policies

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetaudit/fleetaudit/kube"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// fixKeys are the keys each kind of fix may carry besides "kind", as
// docs/writing-md ("Fixes") documents them for the remediator.
var fixKeys = map[string][]string{
	"boot-param": {"set", "remove"},
	"sysctl":     {"set"},
	"limits":     {"set"},
	"logind":     {"set"},
	"modules":    {"load", "blacklist"},
	"nccl-env":   {"set"},
	"pod":        {"file", "container", "add_capabilities", "volume_size_limit", "resources", "env", "remove_env"},
	// service-limits: "unit" and "set" (LimitMEMLOCK= ...).
	"service-limits": {"unit", "set"},
}

// limitsKeys are the keys of a limits fix's set: one limits.conf line.
var limitsKeys = []string{"domain", "item", "type", "value"}

// checkFix lists what is wrong with a finding's fix against the schema: one
// known kind, only its keys, string values, nothing empty.
func checkFix(fix map[string]any) []string {
	var bad []string
	kind, ok := fix["kind"].(string)
	keys, known := fixKeys[kind]
	if !ok || !known {
		return []string{fmt.Sprintf("kind %#v is not one of %s", fix["kind"], strings.Join(slices.Sorted(mapKeysOf(fixKeys)), ", "))}
	}
	if len(fix) == 1 {
		bad = append(bad, "nothing but a kind")
	}
	for _, k := range slices.Sorted(mapKeysOf(fix)) {
		v := fix[k]
		switch {
		case k == "kind":
		case !slices.Contains(keys, k):
			bad = append(bad, fmt.Sprintf("key %q is not one of a %s fix's (%s)", k, kind, strings.Join(keys, ", ")))
		case k == "set" || k == "env":
			bad = append(bad, stringMap(k, v)...)
			if m, ok := v.(map[string]any); ok && kind == "limits" {
				if got := slices.Sorted(mapKeysOf(m)); !slices.Equal(got, limitsKeys) {
					bad = append(bad, fmt.Sprintf("set has keys %v, want %v", got, limitsKeys))
				}
				if t := m["type"]; t != "-" && t != "soft" && t != "hard" {
					bad = append(bad, fmt.Sprintf("set.type %#v is not -, soft or hard", t))
				}
			}
		case k == "remove" || k == "load" || k == "blacklist" || k == "add_capabilities" || k == "remove_env":
			bad = append(bad, stringList(k, v)...)
		case k == "file" || k == "container" || k == "unit":
			if s, ok := v.(string); !ok || s == "" {
				bad = append(bad, fmt.Sprintf("%s %#v is not a non-empty string", k, v))
			}
		case k == "volume_size_limit":
			bad = append(bad, stringMap(k, v)...)
			if m, ok := v.(map[string]any); ok {
				if got := slices.Sorted(mapKeysOf(m)); !slices.Equal(got, []string{"size", "volume"}) {
					bad = append(bad, fmt.Sprintf("volume_size_limit has keys %v, want [size volume]", got))
				}
			}
		case k == "resources":
			m, ok := v.(map[string]any)
			if !ok || len(m) == 0 {
				bad = append(bad, fmt.Sprintf("resources %#v is not a non-empty object", v))
				break
			}
			for _, rk := range slices.Sorted(mapKeysOf(m)) {
				if rk != "limits" {
					bad = append(bad, fmt.Sprintf("resources key %q is not limits", rk))
					continue
				}
				bad = append(bad, stringMap("resources.limits", m[rk])...)
			}
		}
	}
	return bad
}

func stringMap(name string, v any) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{fmt.Sprintf("%s %#v is not a non-empty object", name, v)}
	}
	var bad []string
	for _, k := range slices.Sorted(mapKeysOf(m)) {
		if _, ok := m[k].(string); !ok || k == "" {
			bad = append(bad, fmt.Sprintf("%s[%q] = %#v (%T), want a string", name, k, m[k], m[k]))
		}
	}
	return bad
}

func stringList(name string, v any) []string {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return []string{fmt.Sprintf("%s %#v is not a non-empty list", name, v)}
	}
	var bad []string
	for i, x := range l {
		if s, ok := x.(string); !ok || s == "" {
			bad = append(bad, fmt.Sprintf("%s[%d] = %#v, want a non-empty string", name, i, x))
		}
	}
	return bad
}

func mapKeysOf[V any](m map[string]V) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestCheckFix shows the check catches the typos it is there for.
func TestCheckFix(t *testing.T) {
	tests := []struct {
		name string
		fix  map[string]any
		want []string
	}{
		{"boot param", map[string]any{"kind": "boot-param", "set": map[string]any{"hugetlb_cma": "0"}, "remove": []any{"cma"}}, nil},
		{"limits", map[string]any{"kind": "limits", "set": map[string]any{"domain": "*", "type": "-", "item": "memlock", "value": "unlimited"}}, nil},
		{"pod", map[string]any{"kind": "pod", "container": "w", "add_capabilities": []any{"IPC_LOCK"},
			"volume_size_limit": map[string]any{"volume": "dshm", "size": "64Gi"}, "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}}, nil},
		{"kind typo", map[string]any{"kind": "sysctls", "set": map[string]any{"a": "1"}},
			[]string{"kind \"sysctls\" is not one of boot-param, limits, logind, modules, nccl-env, pod, service-limits, sysctl"}},
		{"no kind", map[string]any{"set": map[string]any{"a": "1"}},
			[]string{"kind <nil> is not one of boot-param, limits, logind, modules, nccl-env, pod, service-limits, sysctl"}},
		{"key of another kind", map[string]any{"kind": "sysctl", "remove": []any{"a"}},
			[]string{`key "remove" is not one of a sysctl fix's (set)`}},
		{"number value", map[string]any{"kind": "sysctl", "set": map[string]any{"vm.max_map_count": 262144}},
			[]string{`set["vm.max_map_count"] = 262144 (int), want a string`}},
		{"empty set", map[string]any{"kind": "logind", "set": map[string]any{}},
			[]string{"set map[string]interface {}{} is not a non-empty object"}},
		{"only a kind", map[string]any{"kind": "modules"}, []string{"nothing but a kind"}},
		{"limits without type", map[string]any{"kind": "limits", "set": map[string]any{"domain": "*", "item": "nofile", "value": "65536"}},
			[]string{"set has keys [domain item value], want [domain item type value]", "set.type <nil> is not -, soft or hard"}},
		{"list of numbers", map[string]any{"kind": "modules", "load": []any{1}}, []string{"load[0] = 1, want a non-empty string"}},
		{"requests", map[string]any{"kind": "pod", "container": "w", "resources": map[string]any{"requests": map[string]any{"memory": "1Gi"}}},
			[]string{`resources key "requests" is not limits`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, checkFix(tt.fix)); diff != "" {
				t.Errorf("checkFix (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFixesOnFixtures evaluates the built-in library over the repository's
// snapshots, with default parameters and with demanding ones so that more
// rules fire, and checks every fix a finding carries against the schema.
func TestFixesOnFixtures(t *testing.T) {
	// Each run is one fleet as fleet-wide rules see it; a host name may
	// appear once per run. The oracle's findings are the runner's
	// (policies/fleetrun's evalguard tests).
	var runs [][]func() (map[string]any, error)
	for _, pattern := range []string{"../collectors/testdata/golden/*.json", "../examples/fleet/snapshots/*.json", "../examples/snapshots/*.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no fixture snapshots %s: %v", pattern, err)
		}
		if strings.HasPrefix(pattern, "../examples/snapshots/") {
			for _, f := range files {
				runs = append(runs, []func() (map[string]any, error){readDoc(f)})
			}
			continue
		}
		var run []func() (map[string]any, error)
		for _, f := range files {
			run = append(run, readDoc(f))
		}
		runs = append(runs, run)
	}
	runs[0] = append(runs[0], withManifests(t, "../collectors/testdata/golden/gpu-node.json", "../kube/testdata"))
	every := func(Rule) bool { return true }
	strict := map[string]any{
		"memlock_min_kb":              67108864,
		"nofile_min":                  4194304,
		"max_map_count_min":           2147483647,
		"somaxconn_min":               65535,
		"job_user":                    "trainer",
		"forbidden_boot_params":       []any{"iommu", "hugetlb_cma", "intel_iommu", "quiet"},
		"forbidden_boot_param_values": map[string]any{"mitigations": []any{"off", "auto"}, "transparent_hugepage": []any{"never"}},
		"baseline":                    map[string]any{"sysctl": map[string]any{"vm.swappiness": 1, "kernel.numa_balancing": "0"}},
	}
	e := newEngine(t, Options{Fleets: map[string]FleetConfig{
		"defaults": {Select: every},
		"strict":   {Select: every, Params: strict},
	}})
	fixed := map[string]bool{}
	findings := 0
	for _, fleet := range []string{"defaults", "strict"} {
		for _, inputs := range runs {
			var all []Finding
			var projs []map[string]any
			for _, load := range inputs {
				doc, err := load()
				if err != nil {
					t.Fatal(err)
				}
				fs, err := e.EvalHost(t.Context(), doc, fleet)
				if err != nil {
					t.Errorf("%s: %v", fleet, err)
				}
				all = append(all, fs...)
				projs = append(projs, e.Project(doc))
			}
			fs, err := e.EvalFleet(t.Context(), fleet, projs)
			if err != nil {
				t.Errorf("%s: %v", fleet, err)
			}
			for _, f := range append(all, fs...) {
				findings++
				if f.Fix == nil {
					continue
				}
				fixed[f.Rule] = true
				for _, msg := range checkFix(f.Fix) {
					t.Errorf("%s: %s on %s: fix %v: %s", fleet, f.Rule, f.Host, f.Fix, msg)
				}
			}
		}
	}
	// The fixtures reach the common cases; each rule's fix has its own
	// Rego test, and TestFixLiterals reads the rest.
	for _, rule := range []string{"hugetlb-cma-on-gpu", "memlock-too-low", "removeipc-enabled", "boot-param-forbidden", "max-map-count-low", "sysctl-skew", "pod-shm-unbounded"} {
		if !fixed[rule] {
			t.Errorf("no %s finding with a fix over the fixtures (%d findings; fixes from %v)", rule, findings, slices.Sorted(mapKeysOf(fixed)))
		}
	}
}

// withManifests is the snapshot in file with the pods of the manifests in
// dir, as collect --pods adds them.
func withManifests(t *testing.T, file, dir string) func() (map[string]any, error) {
	t.Helper()
	var pods []any
	paths, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := kube.ParseManifests(data, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			pods = append(pods, o.Pod)
		}
	}
	if len(pods) == 0 {
		t.Fatalf("no pods in %s", dir)
	}
	return func() (map[string]any, error) {
		doc, err := snapshot.ReadDocument(file)
		if err != nil {
			return nil, err
		}
		doc["host"] = "gpu-node-pods"
		doc["pods"] = pods
		return doc, nil
	}
}

// TestFixLiterals reads the fixes the library writes as literals, so that a
// typo in the kind or a key of a fix fails even where no fixture and no Rego
// test makes the rule fire.
func TestFixLiterals(t *testing.T) {
	mods, err := builtinModules(capabilities(), false)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, name := range slices.Sorted(mapKeysOf(mods)) {
		ast.WalkTerms(mods[name], func(term *ast.Term) bool {
			obj, ok := term.Value.(ast.Object)
			if !ok {
				return false
			}
			fix := obj.Get(ast.InternedTerm("fix"))
			if fix == nil {
				return false
			}
			lit, ok := fix.Value.(ast.Object)
			if !ok {
				return false // computed: the Rego tests and the fixtures check it
			}
			seen++
			var kind ast.String
			if k := lit.Get(ast.InternedTerm("kind")); k != nil {
				kind, _ = k.Value.(ast.String)
			}
			keys, known := fixKeys[string(kind)]
			if !known {
				t.Errorf("%s: fix kind %v is not a known kind", term.Location, lit.Get(ast.InternedTerm("kind")))
				return false
			}
			for _, k := range lit.Keys() {
				s, ok := k.Value.(ast.String)
				if !ok {
					t.Errorf("%s: fix key %v is not a string", term.Location, k)
					continue
				}
				if string(s) != "kind" && !slices.Contains(keys, string(s)) {
					t.Errorf("%s: key %q is not one of a %s fix's (%s)", term.Location, s, kind, strings.Join(keys, ", "))
				}
			}
			return false
		})
	}
	if seen < 10 {
		t.Errorf("found %d fix literals in the library, want every rule's", seen)
	}
}

func readDoc(file string) func() (map[string]any, error) {
	return func() (map[string]any, error) { return snapshot.ReadDocument(file) }
}
