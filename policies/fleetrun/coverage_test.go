package fleetrun

import (
	"context"
	"encoding/json"
	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// runFiles audits files as gpu-training hosts and returns the report, with
// a guard against a hang (a FIFO opened for reading blocks forever).
func runFiles(t *testing.T, e *policies.Engine, files []string, opts RunOptions) *Report {
	t.Helper()
	if opts.FleetOf == nil {
		opts.FleetOf = func(string, map[string]any) string { return "gpu-training" }
	}
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Run(context.Background(), e, SnapshotFiles(files), opts)
		done <- result{rep, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.rep
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return")
	}
	return nil
}

func findingsOf(rep *Report, host string) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Host == host {
			out = append(out, f.Rule+": "+f.Message)
		}
	}
	return out
}

// No host rule fires on a snapshot with no sections; on one whose source
// could not be reached, only collection-error does, whether its sections
// are absent or written as empty values (as audit's failure snapshot did:
// memlock-too-low fired on every host it never read).
func TestNoFindingWithoutData(t *testing.T) {
	dir := t.TempDir()
	sourceErr := []any{map[string]any{"collector": snapshot.CollectorSource, "path": "inventory", "reason": "no snapshot describes it"}}
	failure := snapshot.New("empty-values")
	failure.Errors = append(failure.Errors, snapshot.CollectionError{Collector: snapshot.CollectorSource, Path: "inventory", Reason: "no snapshot describes it"})
	failure.Normalize()
	files := []string{
		writeJSON(t, dir, "bare.json", map[string]any{"schema": snapshot.Schema, "host": "bare"}),
		writeJSON(t, dir, "unread.json", map[string]any{"schema": snapshot.Schema, "host": "unread", "errors": sourceErr}),
		writeJSON(t, dir, "empty-values.json", failure),
	}
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	for _, fleet := range []string{"gpu-training", "web-serving", ""} {
		t.Run("fleet "+fleet, func(t *testing.T) {
			rep := runFiles(t, e, files, RunOptions{FleetOf: func(string, map[string]any) string { return fleet }})
			if got := findingsOf(rep, "bare"); len(got) > 0 {
				t.Errorf("a snapshot with no sections has findings: %q", got)
			}
			for _, h := range []string{"unread", "empty-values"} {
				want := []string{"collection-error: source collector could not read inventory: no snapshot describes it"}
				if diff := cmp.Diff(want, findingsOf(rep, h)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", h, diff)
				}
			}
			for _, hr := range rep.Hosts {
				wantUnread := ""
				if hr.Host != "bare" {
					wantUnread = "inventory: no snapshot describes it"
				}
				if hr.Unread != wantUnread {
					t.Errorf("%s: Unread = %q, want %q", hr.Host, hr.Unread, wantUnread)
				}
				if !slices.Contains(hr.Skipped, "hugetlb-cma-on-gpu") && fleet == "gpu-training" {
					t.Errorf("%s: Skipped = %v, want hugetlb-cma-on-gpu among them", hr.Host, hr.Skipped)
				}
				if slices.Contains(hr.Skipped, "collection-error") {
					t.Errorf("%s: collection-error skipped", hr.Host)
				}
			}
		})
	}
}

// A limits section whose collector failed may lack memlock because the file
// that sets it could not be read: memlock-too-low is withheld. The same
// section without the error is a host with no memlock line: it fires.
func TestPartlyUnreadSectionWithholdsAbsentFacts(t *testing.T) {
	noMemlock := func(name string, limitsErr map[string]any) map[string]any {
		doc := host{Name: name}.Snapshot()
		doc["limits"] = map[string]any{"entries": []any{}, "effective": map[string]any{"*": map[string]any{}}}
		if limitsErr != nil {
			doc["errors"] = []any{limitsErr}
		}
		return doc
	}
	dir := t.TempDir()
	files := []string{
		writeJSON(t, dir, "a.json", noMemlock("read", nil)),
		writeJSON(t, dir, "b.json", noMemlock("blind", map[string]any{"collector": "limits", "path": "/etc/security/limits.d/90-rdma.conf", "reason": "open: permission denied"})),
		// A line pam_limits skips itself: the limits are complete without it.
		writeJSON(t, dir, "c.json", noMemlock("skipped", map[string]any{"collector": "limits", "path": "/etc/security/limits.d/90-rdma.conf", "reason": "parse error: line 1: want \"<domain> <type> <item> <value>\", got 3 field(s)", "skipped": true})),
	}
	rep := runFiles(t, newEngine(t, policies.Options{Fleets: gpuFleets()}), files, RunOptions{})
	has := func(h, rule string) bool {
		return slices.ContainsFunc(findingsOf(rep, h), func(s string) bool { return strings.HasPrefix(s, rule+":") })
	}
	if !has("read", "memlock-too-low") {
		t.Errorf("no memlock line, nothing unread: memlock-too-low did not fire: %q", findingsOf(rep, "read"))
	}
	if has("blind", "memlock-too-low") || !has("blind", "collection-error") {
		t.Errorf("limits partly unread: findings %q, want collection-error and no memlock-too-low", findingsOf(rep, "blind"))
	}
	if !has("skipped", "memlock-too-low") || !has("skipped", "collection-error") {
		t.Errorf("a line pam_limits skips: findings %q, want collection-error and memlock-too-low", findingsOf(rep, "skipped"))
	}
}

// A snapshot whose members have the wrong type is not dropped and its
// hazard not silently lost: the member is a collection error naming its
// path, and the rules reading it are skipped.
func TestSnapshotTypesValidatedOnDecode(t *testing.T) {
	dir := t.TempDir()
	bootString := host{Name: "boot-string", HugetlbCMA: "6G", RDMA: 8}.Snapshot()
	bootString["boot"] = "string"
	cmaNumber := host{Name: "cma-number", HugetlbCMA: "6G", RDMA: 8}.Snapshot()
	params := cmaNumber["boot"].(map[string]any)["running"].(map[string]any)["params"].(map[string]any)
	cmaNumber["boot"].(map[string]any)["running"].(map[string]any)["params"] = map[string]any{"hugetlb_cma": 6, "iommu": params["iommu"]}
	hostNumber := host{Name: "x"}.Snapshot()
	hostNumber["host"] = 7
	files := []string{
		writeJSON(t, dir, "boot-string.json", bootString),
		writeJSON(t, dir, "cma-number.json", cmaNumber),
		writeJSON(t, dir, "host-number.json", hostNumber),
	}
	rep := runFiles(t, newEngine(t, policies.Options{Fleets: gpuFleets()}), files, RunOptions{})
	for h, want := range map[string]string{
		"boot-string": "collection-error: snapshot collector could not read boot: want object, got string",
		"cma-number":  "collection-error: snapshot collector could not read boot.running.params.hugetlb_cma: want string, got number",
		"host-number": "collection-error: snapshot collector could not read host: want string, got number",
	} {
		got := findingsOf(rep, h)
		if !slices.Contains(got, want) {
			t.Errorf("%s: findings %q lack %q", h, got, want)
		}
		for _, f := range got {
			if strings.HasPrefix(f, "hugetlb-cma-on-gpu") {
				t.Errorf("%s: %q rests on a removed member", h, f)
			}
		}
	}
	for _, hr := range rep.Hosts {
		if hr.Host != "host-number" && !slices.Contains(hr.Skipped, "hugetlb-cma-on-gpu") {
			t.Errorf("%s: Skipped = %v, want hugetlb-cma-on-gpu", hr.Host, hr.Skipped)
		}
		if hr.Unread != "" {
			t.Errorf("%s: Unread = %q; the rest of the snapshot was read", hr.Host, hr.Unread)
		}
	}
}

// A *.json that is a FIFO or a link to /dev/zero is a collection-error for
// its host, not a hang or an out-of-memory.
func TestRunNonRegularSnapshots(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	files := append([]string{fifo, zero}, testhost.WriteSnapshots(t, dir, host{Name: "ok", HugetlbCMA: "6G", RDMA: 8})...)
	rep := runFiles(t, newEngine(t, policies.Options{Fleets: gpuFleets()}), files, RunOptions{})
	for h, want := range map[string]string{"fifo": "not a regular file (FIFO)", "zero": "not a regular file (character device)"} {
		got := findingsOf(rep, h)
		if len(got) != 1 || !strings.HasPrefix(got[0], "collection-error") || !strings.Contains(got[0], want) {
			t.Errorf("%s: findings %q, want one collection-error saying %q", h, got, want)
		}
	}
	if got := findingsOf(rep, "ok"); !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "hugetlb-cma-on-gpu") }) {
		t.Errorf("the healthy file beside them was not audited: %q", got)
	}
}

// A user rule that loops is stopped by the per-host budget and named in a
// collection-error finding for each host; the other rules' findings stay,
// and a fleet-wide rule that loops is a failure of its fleet.
func TestHostTimeout(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "slow.rego", "package fleetaudit.rules.slow\n"+
		strings.ReplaceAll(strings.ReplaceAll(strings.Replace(slowRules, "%s", "slow-host", 1), "%s contains", "slow_host contains"), "%s", "[input.host]"))
	writeFile(t, dir, "fleet.rego", "package fleetaudit.fleet_rules.slow\n"+
		strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(strings.Replace(slowRules, "%s", "slow-fleet", 1), "%s contains", "slow_fleet contains"), "%s", "[x.group | some x in input.groups]"), `"host": h`, `"group": h`))
	e := newEngine(t, policies.Options{PolicyDirs: []string{dir}, Fleets: gpuFleets()})
	files := testhost.WriteSnapshots(t, t.TempDir(), host{Name: "gpu-1", HugetlbCMA: "6G", RDMA: 8}, host{Name: "gpu-2"})
	// A budget far above what the library's rules take, even on a loaded
	// machine, and far below what the slow rules take.
	rep := runFiles(t, e, files, RunOptions{HostTimeout: time.Second})

	want := "collection-error: rule slow-host did not finish within 1s; its findings for this host are unknown"
	for _, h := range []string{"gpu-1", "gpu-2"} {
		if got := findingsOf(rep, h); !slices.Contains(got, want) {
			t.Errorf("%s: findings %q lack %q", h, got, want)
		}
	}
	if got := findingsOf(rep, "gpu-1"); !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "hugetlb-cma-on-gpu") }) {
		t.Errorf("gpu-1: the findings of the rules that finished were lost: %q", got)
	}
	for _, hr := range rep.Hosts {
		if !slices.Contains(hr.TimedOut, "slow-host") || slices.Contains(hr.TimedOut, "hugetlb-cma-on-gpu") {
			t.Errorf("%s: TimedOut = %v, want slow-host", hr.Host, hr.TimedOut)
		}
	}
	var fleetErr string
	for _, f := range rep.Failures {
		if f.File == "" && f.Fleet == "gpu-training" {
			fleetErr = f.Err.Error()
			// Nothing else failed: the error is the timeout alone, which
			// says the fleet's other findings are complete.
			if te, ok := f.Err.(*TimeoutError); !ok || !slices.Equal(te.Rules, []string{"slow-fleet"}) || te.Budget != time.Second {
				t.Errorf("fleet failure %#v, want a *TimeoutError for slow-fleet", f.Err)
			}
		}
	}
	if !strings.Contains(fleetErr, "slow-fleet did not finish within 1s") {
		t.Errorf("fleet failure = %q, failures %v", fleetErr, rep.Failures)
	}
}

// A fleet-wide finding about a host whose facts for the rule were not
// collected is withheld, and an unread host (written as audit wrote them: every
// section an empty value) is left out of the fleet. The user rule fires on
// every host without a kernel release, as a careless rule would.
func TestFleetRulesSkipUncollectedHosts(t *testing.T) {
	pol := t.TempDir()
	writeFile(t, pol, "fleet.rego", `package fleetaudit.fleet_rules.site

# METADATA
# title: No kernel release
# description: d
# related_resources: [{ref: "https://example.com"}]
# custom: {id: kernel-release-missing, severity: low, profiles: [all], remediation: r, facts: [kernel.release]}
kernel_release_missing contains f if {
	some g in input.groups
	object.get(g, ["kernel", "release"], "") == ""
	f := {"msg": "no kernel release", "evidence": ["kernel.release"], "group": g.group}
}
`)
	dir := t.TempDir()
	gpu := map[string]string{"fleet": "gpu-training"}
	files := testhost.WriteSnapshots(t, dir,
		host{Name: "gpu-1", Labels: gpu, NCCL: []string{"2.20.5"}},
		host{Name: "gpu-2", Labels: gpu, NCCL: []string{"2.20.5"}},
		host{Name: "gpu-3", Labels: gpu, NCCL: []string{"2.20.5"}},
	)
	noKernel := host{Name: "gpu-4", Labels: gpu}.Snapshot()
	delete(noKernel, "kernel")
	files = append(files, writeJSON(t, dir, "gpu-4.json", noKernel))
	for i := range 5 {
		fail := snapshot.New("gpu-unread-" + string(rune('a'+i)))
		fail.Labels = gpu
		fail.Errors = append(fail.Errors, snapshot.CollectionError{Collector: snapshot.CollectorSource, Path: "10.0.0.1", Reason: "unreachable"})
		fail.Normalize()
		files = append(files, writeJSON(t, dir, fail.Host+".json", fail))
	}
	rep := runFiles(t, newEngine(t, policies.Options{PolicyDirs: []string{pol}, Fleets: gpuFleets()}), files, RunOptions{FleetOf: fleetByLabel})
	for _, f := range rep.Findings {
		if f.Rule == "kernel-release-missing" || (strings.HasPrefix(f.Host, "gpu-unread") && f.Rule != "collection-error") {
			t.Errorf("%s on %s rests on facts never collected: %s", f.Rule, f.Host, f.Message)
		}
	}
}

// The processes family writes nvidia.persistenced, a fact of a section
// named otherwise: a /proc scan that failed leaves false with no source,
// and persistence-mode-off must not read it as "not running". The same
// host with the scan complete (a default backs the false) fires.
func TestPartlyUnreadFactOfAnotherSection(t *testing.T) {
	persistenceOff := func(name string, source bool, errs ...any) map[string]any {
		doc := host{Name: name}.Snapshot()
		nv := doc["nvidia"].(map[string]any)
		for _, g := range nv["gpus"].([]any) {
			g.(map[string]any)["persistence_mode"] = "disabled"
		}
		nv["persistenced"] = false
		if source {
			doc["sources"].(map[string]any)["nvidia.persistenced"] = "default: no nvidia-persistenced process in /proc"
		}
		doc["errors"] = errs
		return doc
	}
	dir := t.TempDir()
	files := []string{
		writeJSON(t, dir, "a.json", persistenceOff("scanned", true)),
		writeJSON(t, dir, "b.json", persistenceOff("comm", false, map[string]any{"collector": "processes", "path": "/proc/77/comm", "reason": "read: is a directory"})),
		writeJSON(t, dir, "c.json", persistenceOff("proc", false, map[string]any{"collector": "processes", "path": "/proc", "reason": "open: permission denied"})),
	}
	rep := runFiles(t, newEngine(t, policies.Options{Fleets: gpuFleets()}), files, RunOptions{})
	has := func(h, rule string) bool {
		return slices.ContainsFunc(findingsOf(rep, h), func(s string) bool { return strings.HasPrefix(s, rule+":") })
	}
	if !has("scanned", "persistence-mode-off") {
		t.Errorf("/proc scanned, no nvidia-persistenced: persistence-mode-off did not fire: %q", findingsOf(rep, "scanned"))
	}
	for _, h := range []string{"comm", "proc"} {
		if has(h, "persistence-mode-off") || !has(h, "collection-error") {
			t.Errorf("%s: /proc scan failed: findings %q, want collection-error and no persistence-mode-off", h, findingsOf(rep, h))
		}
	}
	for _, doc := range []map[string]any{persistenceOff("x", false, map[string]any{"collector": "processes", "path": "/proc", "reason": "open: permission denied"})} {
		if policies.AbsenceKnown(doc, "nvidia.persistenced") {
			t.Error("AbsenceKnown(nvidia.persistenced) after a failed /proc scan")
		}
		if !policies.AbsenceKnown(doc, "nvidia.gpus") {
			t.Error("a failed /proc scan leaves nvidia.gpus unknown")
		}
	}
}

// An unreadable snapshot file is reported by the collection-error rule, as
// any host not read at all: the fleet's severity override applies to it
// (the finding built in Go used to keep the METADATA severity), and no other
// rule fires.
func TestUnreadableSnapshotIsTheRulesFinding(t *testing.T) {
	e := newEngine(t, policies.Options{Fleets: map[string]policies.FleetConfig{
		"gpu-training": {Severity: map[string]string{"collection-error": "high"}},
	}})
	dir := t.TempDir()
	file := writeFile(t, dir, "gpu-9.json", `{"schema": "fleetaudit.snapshot/v1", "host": `)
	rep := runFiles(t, e, []string{file}, RunOptions{})
	want := []policies.Finding{{
		Rule: "collection-error", Severity: "high", Host: "gpu-9", Fleet: "gpu-training",
		Message: "source collector could not read " + file + ": not a JSON snapshot: unexpected EOF",
		Evidence: []policies.Evidence{{Fact: "errors.0", Source: file, Value: map[string]any{
			"collector": "source", "path": file, "reason": "not a JSON snapshot: unexpected EOF"}}},
		SeverityOverride: &policies.SeverityOverride{RuleSeverity: "medium", Profile: "gpu-training"},
	}}
	got := slices.Clone(rep.Findings)
	for i := range got {
		got[i].Title, got[i].Remediation, got[i].References = "", "", nil
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if len(rep.Hosts) != 1 || rep.Hosts[0].Unread == "" {
		t.Errorf("hosts = %+v, want gpu-9 unread", rep.Hosts)
	}
}

func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, string(b))
}

const slowRules = `
# METADATA
# title: Slow
# description: a loop that does not end in any useful time
# related_resources: [{ref: "https://example.com"}]
# custom: {id: %s, severity: low, profiles: [all], remediation: r, facts: [host]}
%s contains f if {
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i * j == -1
	some h in %s
	f := {"msg": "never", "evidence": ["host"], "host": h}
}
`
