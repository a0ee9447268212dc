package fleetrun

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/fleetaudit/fleetaudit/internal/oddsnap"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// The runner (RunAudit: classes, sections, rule results keyed by what each
// rule reads) must give the findings of the oracle (EvalHost, EvalFleet)
// on every fleet. These tests generate fleets whose hosts vary in the
// facts rules read and evaluate them with the built-in rules and with user
// rules written so that a wrong guess of what they read shows.

var evalSeed = flag.Uint64("evalguard.seed", 0, "seed of the generated fleets (0: the fixed seeds)")

// advMeta is a host rule's METADATA; %s is its id.
const advMeta = `# METADATA
# title: Adversarial %[1]s
# description: reads its input in a way static analysis may miss
# related_resources: [{ref: "https://example.com"}]
# custom: {id: %[1]s, severity: low, profiles: [all], remediation: r, facts: [%[2]s]}
`

// advRules are user rules whose findings depend on facts read in ways that
// defeat a naive reading of the compiled Rego: each is id, facts, rule.
var advRules = [][3]string{
	// input read whole, walked.
	{"walk-red", "labels", `walk_red contains {"msg": sprintf("red at %v", [p]), "evidence": ["labels"]} if {
	walk(input, [p, v])
	v == "red"
}`},
	{"whole-alias", "labels", `whole_alias contains {"msg": sprintf("team %v", [t]), "evidence": ["labels"]} if {
	x := input
	t := object.get(x.labels, "team", "none")
}`},
	{"computed-get", "sysctl", `computed_get contains {"msg": sprintf("max_map_count %v", [v]), "evidence": ["sysctl"]} if {
	k := concat("", ["sys", "ctl"])
	v := object.get(input, [k, "running", "vm.max_map_count"], "unset")
	v != "262144"
}`},
	{"var-key", "labels", `var_key contains {"msg": sprintf("%s.%s=%v", [k, n, v]), "evidence": ["labels"]} if {
	some k in ["labels"]
	some n, v in input[k]
}`},
	{"host-by-key", "labels", `host_by_key contains {"msg": sprintf("%s ends in 7", [v]), "evidence": ["labels"]} if {
	some k, v in input
	k == "host"
	endswith(v, "7")
}`},
	{"host-name", "labels", `host_name contains {"msg": sprintf("%s labelled red by name", [input.host]), "evidence": ["labels"]} if {
	input.labels[input.host] == "red"
}`},
	{"with-override", "logind", `with_override contains {"msg": sprintf("team seen as %v", [t]), "evidence": ["logind"]} if {
	t := lib.team with input.labels as {"team": input.logind.remove_ipc}
}`},
	{"data-indirection", "nvidia", `data_indirection contains {"msg": sprintf("%s is %v", [k, v]), "evidence": ["nvidia"]} if {
	some k in ["driver"]
	v := lib[k]
}`},
	{"data-computed", "limits", `data_computed contains {"msg": sprintf("memlock %v", [v]), "evidence": ["limits"]} if {
	k := concat("_", ["mem", "lock"])
	v := data.adv.lib[k]
	v != "unlimited"
}`},
	{"func-arg", "logind", `func_arg contains {"msg": sprintf("ipc %v", [lib.ipc(input)]), "evidence": ["logind"]} if {
	true
}`},
	{"func-section", "sysctl", `func_section contains {"msg": sprintf("%d sysctls", [lib.size(input.sysctl.running)]), "evidence": ["sysctl"]} if {
	true
}`},
	{"gpu-index", "nvidia", `gpu_index contains {"msg": sprintf("first GPU %v", [input.nvidia.gpus[0].model]), "evidence": ["nvidia"]} if {
	true
}`},
	{"walk-section", "limits", `walk_section contains {"msg": sprintf("limited at %v", [p]), "evidence": ["limits"]} if {
	walk(input.limits.effective, [p, v])
	is_string(v)
	v != "unlimited"
}`},
	// Cites the host's name without reading it.
	{"evidence-host", "labels", `evidence_host contains {"msg": "red team", "evidence": ["host", "labels.team"]} if {
	input.labels.team == "red"
}`},
	// Reads the host's name in fleets whose params say so, and in the others
	// reduces to nothing whatever the host (constantIn).
	{"host-when-param", "labels", `host_when_param contains {"msg": sprintf("%s ends in 3", [input.host]), "evidence": ["labels"]} if {
	data.fleetaudit.params.adv_host == true
	endswith(input.host, "3")
}`},
	// Reads the host's name only under a with that fixes it: the same
	// whatever the host.
	{"host-fixed-with", "labels", `host_fixed_with contains {"msg": sprintf("host seen as %s", [h]), "evidence": ["labels"]} if {
	h := lib.hostname with input.host as "fixed"
}`},
	{"every-label", "labels", `every_label contains {"msg": "every label is red", "evidence": ["labels"]} if {
	count(input.labels) > 0
	every v in input.labels { v == "red" }
}`},
}

// checkAdvFire fails the test when an adversarial rule never fires, or
// (but for host-fixed-with) fires on every host alike: the fleet would not
// tell a wrongly shared result from a right one.
func checkAdvFire(t *testing.T, seed uint64, fs []policies.Finding, hosts int) {
	t.Helper()
	msgs := map[string]map[string]int{}
	for _, f := range fs {
		if msgs[f.Rule] == nil {
			msgs[f.Rule] = map[string]int{}
		}
		msgs[f.Rule][f.Message]++
	}
	for _, id := range []string{"team-minority", "group-walk"} {
		if len(msgs[id]) == 0 {
			t.Errorf("seed %d: fleet rule %s never fires", seed, id)
		}
	}
	for _, r := range advRules {
		m := msgs[r[0]]
		n := 0
		for _, c := range m {
			n += c
		}
		if len(m) == 0 || r[0] != "host-fixed-with" && len(m) < 2 && n == hosts {
			t.Errorf("seed %d: rule %s: %d findings, %d messages over %d hosts", seed, r[0], n, len(m), hosts)
		}
	}
}

// advLib is what the rules call: a helper package reached through data.
const advLib = `package adv.lib

team := input.labels.team

driver := input.nvidia.driver_version

mem_lock := input.limits.effective["*"].memlock.soft

ipc(x) := x.logind.remove_ipc

size(x) := count(x)

hostname := input.host
`

// advFleetRules are fleet-wide user rules: one counts hosts by the groups'
// counts, one walks each group.
const advFleetRules = `package fleetaudit.fleet_rules.adv

# METADATA
# title: Adversarial team-minority
# description: a team other than red, with the count of red hosts
# related_resources: [{ref: "https://example.com"}]
# custom: {id: team-minority, severity: low, profiles: [all], remediation: r, facts: [labels.team]}
team_minority contains {"msg": sprintf("team %v among %d red", [g.labels.team, red]), "evidence": ["labels.team"], "group": g.group} if {
	red := sum([x.count | some x in input.groups; x.labels.team == "red"])
	some g in input.groups
	g.labels.team != "red"
}

# METADATA
# title: Adversarial group-walk
# description: red anywhere in what a group holds
# related_resources: [{ref: "https://example.com"}]
# custom: {id: group-walk, severity: low, profiles: [all], remediation: r, facts: [labels]}
group_walk contains {"msg": sprintf("red at %v", [p]), "evidence": ["labels"], "group": g.group} if {
	some g in input.groups
	walk(g, [p, v])
	v == "red"
}
`

// writeAdvPolicies writes the user rules into a new policy directory,
// with extra rules appended, and returns it.
func writeAdvPolicies(t testing.TB, extra string) string {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package fleetaudit.rules.adv\n\nimport data.adv.lib\n")
	for _, r := range advRules {
		fmt.Fprintf(&b, "\n"+advMeta+"%s\n", r[0], r[1], r[2])
	}
	b.WriteString(extra)
	writeFile(t, dir, "adv/rules.rego", b.String())
	writeFile(t, dir, "adv/lib.rego", advLib)
	writeFile(t, dir, "adv/fleet.rego", advFleetRules)
	return dir
}

// genFleet writes n hosts drawn from seed into dir: hosts that differ in
// what the rules read (labels, sysctls, limits, driver, NCCL, boot
// parameters, GPU model, logind) and in name, some of them copies of an
// earlier host under another name.
func genFleet(t testing.TB, dir string, seed uint64, n int) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x6576616c67756172))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	var files []string
	var docs []map[string]any
	for i := range n {
		name := fmt.Sprintf("%s-%d", pick("gpu", "gpu", "web", "odd"), i)
		var doc map[string]any
		if len(docs) > 0 && rng.IntN(4) == 0 {
			// An earlier host's content under this name.
			doc = maps.Clone(docs[rng.IntN(len(docs))])
			doc["host"] = name
		} else {
			h := host{Name: name, Driver: pick("550.90.07", "535.104.05", "550.54.15"),
				RemoveIPC: pick("no", "no", "yes"), HugetlbCMA: pick("", "", "6G"), RDMA: rng.IntN(2) * 2, Sysctls: rng.IntN(3),
				Labels: map[string]string{}}
			if rng.IntN(4) == 0 {
				h.Errors = 1
			}
			for range rng.IntN(3) {
				h.NCCL = append(h.NCCL, pick("2.18.3", "2.19.3", "2.21.5"))
			}
			if v := pick("red", "blue", ""); v != "" {
				h.Labels["team"] = v
			}
			if rng.IntN(3) == 0 {
				h.Labels["color"] = pick("red", "green")
			}
			if rng.IntN(5) == 0 {
				h.Labels[name] = "red"
			}
			if rng.IntN(3) == 0 {
				h.Labels["fleetaudit.io/fleet"] = pick("gpu-training", "web-serving")
			}
			doc = h.Snapshot()
			oddsnap.SetIn(doc, pick("262144", "262144", "65530", "red"), "sysctl", "running", "vm.max_map_count")
			oddsnap.SetIn(doc, pick("unlimited", "unlimited", "65536"), "limits", "effective", "*", "memlock", "soft")
			if gpus, _ := doc["nvidia"].(map[string]any)["gpus"].([]any); len(gpus) > 0 && rng.IntN(3) == 0 {
				g := maps.Clone(gpus[0].(map[string]any))
				g["model"] = pick("NVIDIA A100-SXM4-80GB", "red")
				gpus = slices.Clone(gpus)
				gpus[0] = g
				oddsnap.SetIn(doc, gpus, "nvidia", "gpus")
			}
			if rng.IntN(6) == 0 {
				oddsnap.SetIn(doc, fmt.Sprintf("BOOT_IMAGE=/vmlinuz iommu=pt hugepages=%d", rng.IntN(3)), "boot", "running", "cmdline")
			}
			if rng.IntN(2) == 0 {
				// The host's own root= (boot-config-pending, which leaves
				// the loader's params out, is shared across those), at
				// times with a param the next boot drops.
				params := maps.Clone(doc["boot"].(map[string]any)["running"].(map[string]any)["params"].(map[string]any))
				params["root"] = fmt.Sprintf("UUID=%d", i)
				if rng.IntN(3) == 0 {
					params[pick("quiet", "ro")] = ""
				}
				oddsnap.SetIn(doc, params, "boot", "running", "params")
			}
		}
		docs = append(docs, doc)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("%04d-%s.json", i, name))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

// advFleets are gpuFleets with the param host-when-param reads set in
// gpu-training.
func advFleets() map[string]policies.FleetConfig {
	f := gpuFleets()
	gpu := f["gpu-training"]
	gpu.Params = map[string]any{"adv_host": true}
	f["gpu-training"] = gpu
	return f
}

// fleetOfGen puts a host in a fleet by its label, else by its name.
func fleetOfGen(host string, doc map[string]any) string {
	if l, _ := doc["labels"].(map[string]any); l != nil {
		if f, _ := l["fleetaudit.io/fleet"].(string); f != "" {
			return f
		}
	}
	switch {
	case strings.HasPrefix(host, "gpu-"):
		return "gpu-training"
	case strings.HasPrefix(host, "web-"):
		return "web-serving"
	}
	return ""
}

// oracle evaluates each file alone (EvalHost), then each fleet's
// projections (EvalFleet). A host whose evaluation fails is in failed, as
// host: error.
func oracle(t *testing.T, e *policies.Engine, files []string) (findings []policies.Finding, failed []string) {
	t.Helper()
	ctx := context.Background()
	var out []policies.Finding
	projs := map[string][]map[string]any{}
	seen := map[[2]string]bool{}
	for _, file := range files {
		doc, err := snapshot.ReadDocument(file)
		if err != nil {
			doc = unreadDoc(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), file, err)
		}
		host, _ := doc["host"].(string)
		if host == "" {
			host = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
			doc["host"] = host
		}
		fleet := fleetOfGen(host, doc)
		fs, err := e.EvalHost(ctx, doc, fleet)
		if err != nil {
			failed = append(failed, host+": "+err.Error())
		}
		out = append(out, fs...)
		// A name used twice in a fleet counts its first file only; an
		// unread host takes no part.
		if key := [2]string{fleet, host}; !unreadSnapshot(doc) && !seen[key] {
			seen[key] = true
			projs[fleet] = append(projs[fleet], e.Project(doc))
		}
	}
	for _, fleet := range slices.Sorted(maps.Keys(projs)) {
		fs, err := e.EvalFleet(ctx, fleet, projs[fleet])
		if err != nil {
			t.Fatalf("fleet %q: %v", fleet, err)
		}
		out = append(out, fs...)
	}
	slices.Sort(failed)
	return out, failed
}

// unreadSnapshot reports whether nothing of the host was read.
func unreadSnapshot(doc map[string]any) bool {
	errs, _ := doc["errors"].([]any)
	for _, x := range errs {
		if e, _ := x.(map[string]any); e["collector"] == snapshot.CollectorSource {
			return true
		}
	}
	return false
}

// failedHosts are a report's failures as host: error, sorted.
func failedHosts(rep *Report) []string {
	var out []string
	for _, f := range rep.Failures {
		out = append(out, f.Host+": "+f.Err.Error())
	}
	slices.Sort(out)
	return out
}

// sameFindings compares findings as sorted JSON lines and reports the
// differences.
func sameFindings(t *testing.T, what string, got, want []policies.Finding) {
	t.Helper()
	lines := func(fs []policies.Finding) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = string(b)
		}
		slices.Sort(out)
		return out
	}
	g, w := lines(got), lines(want)
	if slices.Equal(g, w) {
		return
	}
	// By rule: how many findings the runner gave that the oracle did not,
	// and lacked, with an example of each.
	type diff struct {
		extra, lack int
		ex          []string
	}
	by := map[string]*diff{}
	note := func(l string, extra bool) {
		var f policies.Finding
		_ = json.Unmarshal([]byte(l), &f)
		d := by[f.Rule]
		if d == nil {
			d = &diff{}
			by[f.Rule] = d
		}
		sign := "-"
		if extra {
			d.extra++
			sign = "+"
		} else {
			d.lack++
		}
		if len(d.ex) < 2 {
			d.ex = append(d.ex, fmt.Sprintf("%s %s %s: %s", sign, f.Host, f.Fleet, f.Message))
		}
	}
	for _, l := range g {
		if _, ok := slices.BinarySearch(w, l); !ok {
			note(l, true)
		}
	}
	for _, l := range w {
		if _, ok := slices.BinarySearch(g, l); !ok {
			note(l, false)
		}
	}
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(by)) {
		d := by[id]
		fmt.Fprintf(&b, "\n\t%s: %d not in the oracle, %d missing; e.g.\n\t\t%s", id, d.extra, d.lack, strings.Join(d.ex, "\n\t\t"))
	}
	t.Errorf("%s: %d findings, the oracle %d (+ runner only, - oracle only):%s", what, len(g), len(w), b.String())
}

func guardSeeds() []uint64 {
	if *evalSeed != 0 {
		return []uint64{*evalSeed}
	}
	return []uint64{1, 2, 3}
}

// RunAudit gives the oracle's findings on generated fleets, with the
// built-in rules and the adversarial user rules, whether hosts come as
// bytes (classes and sections) or as documents, and whatever FleetOf is
// shown of a shared document.
func TestRunAuditIsTheOracle(t *testing.T) {
	e := newEngine(t, policies.Options{PolicyDirs: []string{writeAdvPolicies(t, "")}, Fleets: advFleets()})
	for _, seed := range guardSeeds() {
		dir := t.TempDir()
		files := genFleet(t, dir, seed, 80)
		want, _ := oracle(t, e, files)
		checkAdvFire(t, seed, want, len(files))
		for _, workers := range []int{1, 2} {
			// docs: hosts as documents (Load), never classed or split;
			// match: FleetOf sees only the sections it reads.
			for _, mode := range []struct{ docs, match bool }{{false, false}, {true, false}, {false, true}} {
				inputs := SnapshotFiles(files)
				if mode.docs {
					inputs = func(yield func(HostInput) bool) {
						for in := range SnapshotFiles(files) {
							in.Read = nil
							if !yield(in) {
								return
							}
						}
					}
				}
				opts := RunOptions{FleetOf: fleetOfGen, Workers: workers}
				if mode.match {
					opts.FleetSections = []string{"labels"}
				}
				rep, err := Run(context.Background(), e, inputs, opts)
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("seed %d (-evalguard.seed=%d), %d workers, documents %v, fleet sections %v", seed, seed, workers, mode.docs, mode.match)
				for _, f := range rep.Failures {
					t.Errorf("%s: failure %v", what, f)
				}
				sameFindings(t, what, rep.Findings, want)
			}
		}
	}
}

// The built-in rules alone on a generated fleet.
func TestRunAuditIsTheOracleBuiltin(t *testing.T) {
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	for _, seed := range guardSeeds() {
		files := genFleet(t, t.TempDir(), seed+100, 80)
		rep, err := Run(context.Background(), e, SnapshotFiles(files), RunOptions{FleetOf: fleetOfGen})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := oracle(t, e, files)
		sameFindings(t, fmt.Sprintf("seed %d (-evalguard.seed=%d)", seed, seed), rep.Findings, want)
	}
}

// slowRule loops on hosts labelled slow, far past any budget.
const slowRule = `
# METADATA
# title: Slow
# description: a loop that does not end in any useful time
# related_resources: [{ref: "https://example.com"}]
# custom: {id: slow-on-label, severity: low, profiles: [all], remediation: r, facts: [labels]}
slow_on_label contains {"msg": "never", "evidence": ["labels"]} if {
	input.labels.color == "green"
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i * j == -1
}
`

// Under a rule budget, a rule that runs out of it is a collection-error
// finding for its host, and every other rule's findings are the oracle's:
// on those hosts the rules are evaluated one by one, on the sections they
// read (the built-in rules) or on the whole input (with the user rules).
func TestRunAuditUnderBudgetIsTheOracle(t *testing.T) {
	for _, set := range []string{"builtin", "user"} {
		t.Run(set, func(t *testing.T) {
			var refDirs, dirs []string
			if set == "user" {
				refDirs = []string{writeAdvPolicies(t, "")}
				dirs = []string{writeAdvPolicies(t, slowRule)}
			} else {
				dir := t.TempDir()
				writeFile(t, dir, "slow.rego", "package fleetaudit.rules.slow\n"+slowRule)
				dirs = []string{dir}
			}
			ref := newEngine(t, policies.Options{PolicyDirs: refDirs, Fleets: gpuFleets()})
			e := newEngine(t, policies.Options{PolicyDirs: dirs, Fleets: gpuFleets()})
			seed := guardSeeds()[0] + 200
			files := genFleet(t, t.TempDir(), seed, 40)
			// A slow host first: its fleet's first query, of every rule,
			// runs out of the budget too.
			for i, f := range files {
				if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"color":"green"`)) {
					files[0], files[i] = files[i], files[0]
					break
				}
			}
			want, _ := oracle(t, ref, files)
			const budget = time.Second
			start := time.Now()
			rep, err := Run(context.Background(), e, SnapshotFiles(files), RunOptions{FleetOf: fleetOfGen, HostTimeout: budget})
			if err != nil {
				t.Fatal(err)
			}
			timeout := "collection-error: rule slow-on-label did not finish within 1s; its findings for this host are unknown"
			var got []policies.Finding
			slowHosts := 0
			for _, f := range rep.Findings {
				if f.Rule+": "+f.Message == timeout {
					slowHosts++
					continue
				}
				got = append(got, f)
			}
			if slowHosts == 0 {
				t.Fatalf("seed %d: no host ran out of the budget; the test needs hosts labelled color=green", seed)
			}
			sameFindings(t, fmt.Sprintf("seed %d (-evalguard.seed=%d) under a budget", seed, seed-200), got, want)
			// Generous: each slow host costs at most two budgets.
			if d := time.Since(start); d > time.Duration(2*slowHosts+30)*budget {
				t.Errorf("the run took %v for %d hosts out of budget", d, slowHosts)
			}
		})
	}
}

// errRule fails on hosts with two labels of different values: a complete
// rule with conflicting values is an evaluation error.
const errRule = `
# METADATA
# title: Conflict
# description: a complete rule with two values on hosts with two labels
# related_resources: [{ref: "https://example.com"}]
# custom: {id: conflicting, severity: low, profiles: [all], remediation: r, facts: [labels]}
conflicting contains {"msg": sprintf("label %v", [lib.one_label]), "evidence": ["labels"]} if {
	true
}
`

// A rule that fails on a host is a failure of that host, and the other
// rules' findings stay, whether or not the host is the first of its fleet
// (one query for all rules) and whatever the order the hosts come in.
func TestRuleErrorIsTheRulesAlone(t *testing.T) {
	dir := writeAdvPolicies(t, errRule)
	writeFile(t, dir, "adv/lib2.rego", "package adv.lib\n\none_label := v if { some v in input.labels }\n")
	e := newEngine(t, policies.Options{PolicyDirs: []string{dir}, Fleets: gpuFleets()})
	for _, seed := range guardSeeds() {
		seed += 300
		files := genFleet(t, t.TempDir(), seed, 40)
		want, wantFailed := oracle(t, e, files)
		if len(wantFailed) == 0 || len(wantFailed) == len(files) {
			t.Fatalf("seed %d: %d of %d hosts fail; the test needs some of each", seed, len(wantFailed), len(files))
		}
		for _, order := range []string{"given", "reversed"} {
			in := slices.Clone(files)
			if order == "reversed" {
				slices.Reverse(in)
			}
			rep, err := Run(context.Background(), e, SnapshotFiles(in), RunOptions{FleetOf: fleetOfGen, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("seed %d (-evalguard.seed=%d), hosts in %s order", seed, seed-300, order)
			sameFindings(t, what, rep.Findings, want)
			got := failedHosts(rep)
			if !slices.Equal(got, wantFailed) {
				t.Errorf("%s: failures\n\t%s\nthe oracle's\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(wantFailed, "\n\t"))
			}
			for _, f := range got {
				if !strings.Contains(f, "rule conflicting (") {
					t.Errorf("%s: failure %q does not name the rule", what, f)
				}
			}
		}
	}
}

// The fleets of bench/gen (hosts that all differ; hosts mostly equal, and
// equal content under names of other fleets and of none), files that
// decoding by sections must read as a whole decode does (writeOddSnapshots)
// and the example fleets: the built-in rules and the user rules give the
// oracle's findings.
func TestRunAuditIsTheOracleOnFleets(t *testing.T) {
	e := newEngine(t, policies.Options{PolicyDirs: []string{writeAdvPolicies(t, "")}, Fleets: gpuFleets()})
	tmp := t.TempDir()
	unique, repeated := filepath.Join(tmp, "unique"), filepath.Join(tmp, "repeated")
	if err := fleetgen.Generate(fleetgen.Options{N: 120, Dir: unique, Roots: "../../testdata/hosts", Seed: 7, Unique: true}); err != nil {
		t.Fatal(err)
	}
	if err := fleetgen.Generate(fleetgen.Options{N: 120, Dir: repeated, Roots: "../../testdata/hosts", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	gpu, err := os.ReadFile(filepath.Join(repeated, "gpu-00000.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-90000", "web-90001", "odd-1", "odd-2", "gpu-90000"} {
		b := bytes.Replace(gpu, []byte(`"host":"gpu-00000"`), []byte(`"host":"`+name+`"`), 1)
		if err := os.WriteFile(filepath.Join(repeated, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	odd := filepath.Join(tmp, "odd")
	oddsnap.Write(t, unique, odd)
	for _, dir := range []string{unique, repeated, odd, "../../examples/fleet/snapshots", "../../examples/snapshots"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(dir, "*.json"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no snapshots in %s: %v", dir, err)
			}
			slices.Sort(files)
			want, _ := oracle(t, e, files)
			rep, err := Run(context.Background(), e, SnapshotFiles(files), RunOptions{FleetOf: fleetOfGen})
			if err != nil {
				t.Fatal(err)
			}
			sameFindings(t, dir, rep.Findings, want)
		})
	}
}

// The pairs the runner keeps for speed give what their plain forms give:
// a document decoded by shared sections is the whole decode's, its
// projection (projectSections) is Project's, and evidence resolved by
// section is evidence's, for every fact a rule declares. Over generated
// fleets, odd files, and a second pass where every section is cached.
func TestSectionPairsAreThePlainForms(t *testing.T) {
	e := newEngine(t, policies.Options{PolicyDirs: []string{writeAdvPolicies(t, "")}, Fleets: gpuFleets()})
	tmp := t.TempDir()
	unique := filepath.Join(tmp, "unique")
	if err := fleetgen.Generate(fleetgen.Options{N: 40, Dir: unique, Roots: "../../testdata/hosts", Seed: 11, Unique: true}); err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(tmp, "odd")
	oddsnap.Write(t, unique, odd)
	files := genFleet(t, t.TempDir(), guardSeeds()[0]+400, 40)
	for _, dir := range []string{unique, odd} {
		more, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		files = append(files, more...)
	}
	facts := []string{"host", "labels", "labels.team", "sysctl.running.vm.max_map_count", "nvidia.gpus", "boot.running.params", "kernel", "x.y", "sources"}
	for _, r := range e.Rules() {
		facts = append(facts, r.Facts...)
	}
	s := &runState{e: e, sections: newSectionCache()}
	w := new(worker)
	for pass := range 2 {
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := snapshot.ReadDocument(file)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got, err := s.decode(raw, w)
			if err != nil {
				t.Fatalf("%s: decode by sections: %v", file, err)
			}
			what := fmt.Sprintf("pass %d, %s", pass, file)
			if !jsonEqual(t, got, want) {
				t.Fatalf("%s: the document decoded by sections is not the whole decode's", what)
			}
			if !jsonEqual(t, projectSections(e, got, &w.sections), e.Project(want)) {
				t.Errorf("%s: projectSections differs from Project", what)
			}
			for _, f := range facts {
				if f == "" || strings.Contains(f, "*") {
					continue
				}
				if g, w := w.sections.evidence(got, f), policies.EvidenceOf(want, f); !jsonEqual(t, g, w) {
					t.Errorf("%s: evidence of %s by section %+v, plain %+v", what, f, g, w)
				}
			}
		}
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

// Files that do not decode, or decode only in part, are what the oracle
// makes of them: whether the runner reads them whole or by members, and
// whether their content equals another file's but for the name.
func TestRunAuditIsTheOracleOnBrokenFiles(t *testing.T) {
	e := newEngine(t, policies.Options{PolicyDirs: []string{writeAdvPolicies(t, "")}, Fleets: gpuFleets()})
	dir := t.TempDir()
	files := genFleet(t, dir, guardSeeds()[0]+500, 8)
	good, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	hostAt := bytes.Index(good, []byte(`"host":`))
	// A member whose value a worker knows from the file before, then more.
	var limits []byte
	members, _ := snapshot.SplitMembers(good, nil)
	for _, m := range members {
		if m.Name == "limits" {
			limits = m.Value
		}
	}
	if limits == nil {
		t.Fatal("no limits member")
	}
	broken := map[string]string{
		"truncated":     string(good[:len(good)/2]),
		"array":         `[]`,
		"empty":         ``,
		"empty-object":  `{}`,
		"host-number":   `{"host": 5, "labels": {"team": "red"}}`,
		"host-twice":    `{"host": "a", "labels": {"team": "red"}, "host": "b"}`,
		"trailing":      string(good) + ` x`,
		"bad-utf8":      strings.Replace(string(good), `"schema":"`, "\"schema\":\"\xff", 1),
		"big-number":    strings.Replace(string(good), `"labels":{`, `"labels":{"n":1e400,`, 1),
		"escaped-host":  strings.Replace(string(good), `"host":`, `"h\u006fst":`, 1),
		"host-first":    `{"host":"gpu-first",` + string(good[1:hostAt]) + string(good[hostAt+bytes.IndexByte(good[hostAt:], ',')+1:]),
		"labels-string": strings.Replace(string(good), `"labels":{`, `"labels":"red","x-labels":{`, 1),
		"null-section":  strings.Replace(string(good), `"limits":{`, `"limits":null,"x-limits":{`, 1),
		"known-then":    strings.Replace(string(good), `"limits":`, `"limits":`+string(limits)+` `, 1),
		"known-twice":   strings.Replace(string(good), `"limits":`, `"limits":`+string(limits)+`,"limits":`, 1),
	}
	for name, content := range broken {
		for _, twin := range []string{"gpu-" + name, "gpu-" + name + "-twin"} {
			p := filepath.Join(dir, twin+".json")
			if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, `"host":"`+strings.TrimSuffix(filepath.Base(files[0])[5:], ".json")+`"`, `"host":"`+twin+`"`)), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
	}
	// A file gone before it is read, and a directory.
	files = append(files, filepath.Join(dir, "gpu-missing.json"))
	if err := os.Mkdir(filepath.Join(dir, "gpu-dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(dir, "gpu-dir.json"))
	slices.Sort(files)
	want, _ := oracle(t, e, files)
	for _, docs := range []bool{false, true} {
		inputs := SnapshotFiles(files)
		if docs {
			inputs = func(yield func(HostInput) bool) {
				for in := range SnapshotFiles(files) {
					in.Read = nil
					if !yield(in) {
						return
					}
				}
			}
		}
		rep, err := Run(context.Background(), e, inputs, RunOptions{FleetOf: fleetOfGen})
		if err != nil {
			t.Fatal(err)
		}
		sameFindings(t, fmt.Sprintf("documents %v", docs), rep.Findings, want)
	}
}
