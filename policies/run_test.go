package policies

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fleetByLabel(host string, doc map[string]any) string {
	labels := LabelsOf(doc)
	if doc == nil && strings.HasPrefix(host, "gpu-") {
		return "gpu-training" // unreadable snapshot: only the name is known
	}
	return labels["fleet"]
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	gpu := map[string]string{"fleet": "gpu-training"}
	files := writeSnapshots(t, dir,
		host{name: "gpu-1", labels: gpu, nccl: []string{"2.20.5"}},
		host{name: "gpu-2", labels: gpu, nccl: []string{"2.20.5"}, hugetlbCMA: "6G", rdma: 8},
		host{name: "gpu-3", labels: gpu, nccl: []string{"2.20.5"}},
		host{name: "gpu-4", labels: gpu, nccl: []string{"2.18.3"}},
		host{name: "web-1", labels: map[string]string{"fleet": "web-serving"}, hugetlbCMA: "6G", removeIPC: "yes"},
		host{name: "stray", removeIPC: "yes"},
		host{name: "odd", labels: map[string]string{"fleet": "not-configured"}},
	)
	files = append(files,
		writeFile(t, dir, "gpu-broken.json", `{"schema": "fleetaudit.snapshot/v1", "host": `),
		writeFile(t, dir, "gpu-future.json", `{"schema": "fleetaudit.snapshot/v2", "host": "gpu-future"}`),
	)
	// The same host name twice: audited twice, counted once by fleet rules.
	b, _ := json.Marshal(host{name: "gpu-1", labels: gpu, nccl: []string{"2.18.3"}}.snapshot())
	files = append(files, writeFile(t, dir, "gpu-1-again.json", string(b)))

	e := newEngine(t, Options{Fleets: gpuFleets()})
	var progress atomic.Int64
	rep, err := e.Run(context.Background(), files, RunOptions{
		FleetOf:  fleetByLabel,
		Progress: func(done, total int) { progress.Add(1) },
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
	var findings []Finding
	for _, f := range rep.Findings {
		if under[f.Rule] {
			got = append(got, f.Host+" "+f.Rule+" "+f.Severity)
			findings = append(findings, f)
		}
	}
	want := []string{
		"gpu-2 hugetlb-cma-on-gpu critical",
		"stray unknown-fleet high", // a host with GPUs in no fleet
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
	if f := rep.Failures[0]; f.Host != "odd" || !errors.Is(f, ErrUnknownFleet) {
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
		h := host{name: "gpu-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), labels: map[string]string{"fleet": "gpu-training"},
			nccl: []string{"2.20.5"}, driver: "550.90.07", errors: i % 3}
		if i%5 == 0 {
			h.nccl, h.driver, h.hugetlbCMA = []string{"2.18.3"}, "550.54.14", "2G"
		}
		hosts = append(hosts, h)
	}
	files := writeSnapshots(t, dir, hosts...)
	e := newEngine(t, Options{Fleets: gpuFleets()})
	var reports []string
	for _, workers := range []int{1, 3, 16} {
		rep, err := e.Run(context.Background(), files, RunOptions{FleetOf: fleetByLabel, Workers: workers})
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
	files := writeSnapshots(t, t.TempDir(), host{name: "a"}, host{name: "b"})
	e := newEngine(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Run(ctx, files, RunOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestReadSnapshotRefusesOversizeAndNonObjects(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxSnapshotBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for file, want := range map[string]string{
		big:                                      "over the",
		writeFile(t, dir, "null.json", "null"):   "the document is null, not an object",
		writeFile(t, dir, "two.json", "{} {}"):   "unexpected data after",
		writeFile(t, dir, "list.json", "[1]"):    "the document is a list, not an object",
		writeFile(t, dir, "noschema.json", `{}`): "no \"schema\" field",
		filepath.Join(dir, "missing.json"):       "no such file",
	} {
		if _, err := readSnapshot(file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", filepath.Base(file), err, want)
		}
	}
}
