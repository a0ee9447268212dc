package fleetrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/policies"
)

func fleetByLabel(host string, doc map[string]any) string {
	labels := policies.LabelsOf(doc)
	if doc == nil && strings.HasPrefix(host, "gpu-") {
		return "gpu-training" // unreadable snapshot: only the name is known
	}
	return labels["fleet"]
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	gpu := map[string]string{"fleet": "gpu-training"}
	files := testhost.WriteSnapshots(t, dir,
		host{Name: "gpu-1", Labels: gpu, NCCL: []string{"2.20.5"}},
		host{Name: "gpu-2", Labels: gpu, NCCL: []string{"2.20.5"}, HugetlbCMA: "6G", RDMA: 8},
		host{Name: "gpu-3", Labels: gpu, NCCL: []string{"2.20.5"}},
		host{Name: "gpu-4", Labels: gpu, NCCL: []string{"2.18.3"}},
		host{Name: "web-1", Labels: map[string]string{"fleet": "web-serving"}, HugetlbCMA: "6G", RemoveIPC: "yes"},
		host{Name: "stray", RemoveIPC: "yes"},
		host{Name: "odd", Labels: map[string]string{"fleet": "not-configured"}},
	)
	files = append(files,
		writeFile(t, dir, "gpu-broken.json", `{"schema": "fleetaudit.snapshot/v1", "host": `),
		writeFile(t, dir, "gpu-future.json", `{"schema": "fleetaudit.snapshot/v2", "host": "gpu-future"}`),
	)
	// The same host name twice: audited twice, counted once by fleet rules.
	b, _ := json.Marshal(host{Name: "gpu-1", Labels: gpu, NCCL: []string{"2.18.3"}}.Snapshot())
	files = append(files, writeFile(t, dir, "gpu-1-again.json", string(b)))

	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	var progress atomic.Int64
	rep, err := Run(context.Background(), e, SnapshotFiles(files), RunOptions{
		FleetOf:  fleetByLabel,
		Progress: func(done int) { progress.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if int(progress.Load()) != len(files) {
		t.Errorf("progress called %d times for %d files", progress.Load(), len(files))
	}

	var hosts []string
	for _, h := range rep.Hosts {
		hosts = append(hosts, h.Host+"@"+h.Fleet)
	}
	wantHosts := []string{"gpu-1@gpu-training", "gpu-2@gpu-training", "gpu-3@gpu-training", "gpu-4@gpu-training",
		"web-1@web-serving", "stray@", "odd@not-configured", "gpu-broken@gpu-training", "gpu-future@gpu-training", "gpu-1@gpu-training"}
	if diff := cmp.Diff(wantHosts, hosts); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}

	// The rules this test is about; the library's other rules fire too.
	under := map[string]bool{"hugetlb-cma-on-gpu": true, "unknown-fleet": true, "collection-error": true, "nccl-version-skew": true}
	var got []string
	var findings []policies.Finding
	for _, f := range rep.Findings {
		if under[f.Rule] {
			got = append(got, f.Host+" "+f.Rule+" "+f.Severity)
			findings = append(findings, f)
		}
	}
	want := []string{
		"gpu-2 hugetlb-cma-on-gpu high", // RDMA, but driver 550.90.07 pins with FOLL_LONGTERM
		"stray unknown-fleet high",      // a host with GPUs in no fleet
		"gpu-broken collection-error medium",
		"gpu-future collection-error medium",
		// fleet-wide, after the hosts: 2.20.5 on 3 of 4 hosts (the second
		// gpu-1 is not counted).
		"gpu-4 nccl-version-skew high",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	broken := findings[2]
	// The finding is the collection-error rule's, on a document standing
	// for the file: a source error naming it.
	if !strings.Contains(broken.Message, "source collector could not read "+filepath.Join(dir, "gpu-broken.json")+": not a JSON snapshot") ||
		broken.Evidence[0].Fact != "errors.0" || broken.Evidence[0].Source != filepath.Join(dir, "gpu-broken.json") {
		t.Errorf("broken snapshot finding = %+v", broken)
	}
	if !strings.Contains(findings[3].Message, "newer fleetaudit") {
		t.Errorf("future snapshot finding = %+v", findings[3])
	}
	skew := findings[4]
	if skew.Expected != "2.20.5" || skew.Basis != "majority" || skew.Fleet != "gpu-training" ||
		skew.Evidence[0].Source != "/usr/lib/libnccl.so.2.18.3" {
		t.Errorf("skew finding = %+v", skew)
	}

	if len(rep.Failures) != 2 {
		t.Fatalf("failures = %v", rep.Failures)
	}
	if f := rep.Failures[0]; f.Host != "odd" || !errors.Is(f, policies.ErrUnknownFleet) {
		t.Errorf("failure 0 = %v", f)
	}
	if f := rep.Failures[1]; f.File != files[9] || !strings.Contains(f.Error(), "host name also used by "+files[0]) {
		t.Errorf("failure 1 = %v", f)
	}
	b, err = json.Marshal(rep.Failures[0])
	if err != nil || !strings.Contains(string(b), `"host":"odd","fleet":"not-configured","error":"unknown fleet: \"not-configured\""`) {
		t.Errorf("failure as JSON = %s, %v", b, err)
	}
}

// Output does not depend on how many workers ran.
func TestRunDeterministic(t *testing.T) {
	dir := t.TempDir()
	var hosts []host
	for i := range 40 {
		h := host{Name: "gpu-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Labels: map[string]string{"fleet": "gpu-training"},
			NCCL: []string{"2.20.5"}, Driver: "550.90.07", Errors: i % 3}
		if i%5 == 0 {
			h.NCCL, h.Driver, h.HugetlbCMA = []string{"2.18.3"}, "550.54.14", "2G"
		}
		hosts = append(hosts, h)
	}
	files := testhost.WriteSnapshots(t, dir, hosts...)
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	var reports []string
	for _, workers := range []int{1, 3, 16} {
		rep, err := Run(context.Background(), e, SnapshotFiles(files), RunOptions{FleetOf: fleetByLabel, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		reports = append(reports, string(b))
	}
	if reports[0] != reports[1] || reports[0] != reports[2] {
		t.Error("reports differ between worker counts")
	}
}

func TestRunCancelled(t *testing.T) {
	files := testhost.WriteSnapshots(t, t.TempDir(), host{Name: "a"}, host{Name: "b"})
	e := newEngine(t, policies.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, e, SnapshotFiles(files), RunOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

// Hosts need not be files: Run takes any input whose Load gives a document,
// names an input that cannot be loaded by its origin, and shows each host's
// document, as the rules see it, to Loaded.
func TestRunInputs(t *testing.T) {
	gpu := map[string]string{"fleet": "gpu-training"}
	cma := host{Name: "gpu-1", Labels: gpu, HugetlbCMA: "6G"}.Doc(t)
	nameless := host{Name: "", Labels: gpu}.Doc(t)
	inputs := []HostInput{
		{Origin: "/srv/roots/gpu-1", Name: "gpu-1", Load: func(context.Context) (map[string]any, error) { return cma, nil }},
		{Origin: "10.0.0.7", Name: "gpu-2", Load: func(context.Context) (map[string]any, error) {
			return nil, errors.New("connection refused")
		}},
		{Origin: "/srv/roots/gpu-3", Name: "gpu-3", Load: func(context.Context) (map[string]any, error) { return nameless, nil }},
	}
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	var mu sync.Mutex
	seen := map[string]map[string]any{}
	rep, err := Run(context.Background(), e, slices.Values(inputs), RunOptions{
		FleetOf: func(host string, doc map[string]any) string {
			if doc == nil {
				return "gpu-training"
			}
			return fleetByLabel(host, doc)
		},
		Loaded: func(in HostInput, doc, _ map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			seen[in.Origin] = doc
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range rep.Hosts {
		got = append(got, h.File+" "+h.Host+" unread="+h.Unread)
	}
	want := []string{
		"/srv/roots/gpu-1 gpu-1 unread=",
		"10.0.0.7 gpu-2 unread=10.0.0.7: connection refused",
		"/srv/roots/gpu-3 gpu-3 unread=", // the input's name, the document had none
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
	got = nil
	for _, f := range rep.Findings {
		if f.Rule == "hugetlb-cma-on-gpu" || f.Rule == "collection-error" {
			got = append(got, f.Host+" "+f.Rule+" "+f.Evidence[0].Source)
		}
	}
	want = []string{"gpu-1 hugetlb-cma-on-gpu /proc/cmdline", "gpu-2 collection-error 10.0.0.7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if seen["/srv/roots/gpu-1"]["host"] != "gpu-1" || seen["/srv/roots/gpu-3"]["host"] != "gpu-3" {
		t.Errorf("Loaded saw hosts %v and %v", seen["/srv/roots/gpu-1"]["host"], seen["/srv/roots/gpu-3"]["host"])
	}
	if errs, _ := seen["10.0.0.7"]["errors"].([]any); len(errs) != 1 {
		t.Errorf("Loaded saw the unread host as %v", seen["10.0.0.7"])
	}
}

// Documents are loaded as workers free up, not all ahead: when the
// iterator is asked for host k, at least k-workers hosts are done, so at
// most workers documents are alive at once whatever the fleet's size.
func TestRunLoadsLazily(t *testing.T) {
	const workers, n = 2, 12
	doc := host{Name: "h"}.Doc(t)
	e := newEngine(t, policies.Options{})
	var done atomic.Int64
	var early []string
	hosts := func(yield func(HostInput) bool) {
		for k := range n {
			if d := done.Load(); d < int64(k-workers) {
				early = append(early, fmt.Sprintf("host %d asked for with %d done", k, d))
			}
			in := HostInput{Origin: fmt.Sprint(k), Name: fmt.Sprint("h", k), Load: func(context.Context) (map[string]any, error) {
				return maps.Clone(doc), nil
			}}
			if !yield(in) {
				return
			}
		}
	}
	rep, err := Run(context.Background(), e, hosts, RunOptions{Workers: workers, Progress: func(int) { done.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Hosts) != n || len(early) > 0 {
		t.Errorf("%d hosts; loaded ahead of the workers: %v", len(rep.Hosts), early)
	}
}

// Tally counts what Each yields, by fleet, severity and rule: on a run of
// hosts sharing templates and fleet groups, a host name given twice, an
// unreadable file and hosts of several fleets and none.
func TestTallyCountsEach(t *testing.T) {
	dir := t.TempDir()
	gpu := map[string]string{"fleet": "gpu-training"}
	var hosts []host
	for i := range 30 {
		h := host{Name: fmt.Sprintf("gpu-%02d", i), Labels: gpu, NCCL: []string{"2.20.5"}}
		if i%4 == 0 {
			h.NCCL, h.HugetlbCMA, h.RDMA = []string{"2.18.3"}, "6G", 8
		}
		hosts = append(hosts, h)
	}
	hosts = append(hosts,
		host{Name: "web-1", Labels: map[string]string{"fleet": "web-serving"}, HugetlbCMA: "6G", RemoveIPC: "yes"},
		host{Name: "web-2", Labels: map[string]string{"fleet": "web-serving"}, RemoveIPC: "yes"},
		host{Name: "stray", RemoveIPC: "yes"})
	files := testhost.WriteSnapshots(t, dir, hosts...)
	files = append(files, writeFile(t, dir, "gpu-broken.json", `{"schema": "fleetaudit.snapshot/v1", "host": `))
	b, _ := json.Marshal(host{Name: "gpu-01", Labels: gpu, NCCL: []string{"2.18.3"}}.Snapshot())
	files = append(files, writeFile(t, dir, "gpu-01-again.json", string(b)))

	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	a, err := RunAudit(context.Background(), e, SnapshotFiles(files), RunOptions{FleetOf: fleetByLabel})
	if err != nil {
		t.Fatal(err)
	}
	key := func(f *policies.Finding) string { return f.Fleet + " " + f.Severity + " " + f.Rule }
	want, got := map[string]int{}, map[string]int{}
	for f := range a.Each {
		want[key(f)]++
	}
	a.Tally(func(f *policies.Finding, n int) { got[key(f)] += n })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tally (-Each +Tally):\n%s", diff)
	}
	if want["gpu-training high nccl-version-skew"] == 0 || want["gpu-training medium collection-error"] == 0 {
		t.Errorf("the run has no fleet finding or collection error: %v", want)
	}
}
