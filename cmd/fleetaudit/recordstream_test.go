package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/store"
)

// audit --record with a format that streams its findings (json) stores
// the run row for row as with one that collects them (sarif): hosts,
// findings with their seq, match keys and waived marks, blobs, the trend
// and the runs row (summary and waivers report included). The streamed
// report, read after the store read the findings, is the report of the
// same audit not recorded.
func TestRecordStreamedAsCollected(t *testing.T) {
	if j, _ := reports.Get("json"); !j.Streams() {
		t.Fatal("json must stream and sarif collect for this test to compare the two")
	}
	if s, _ := reports.Get("sarif"); s.Streams() {
		t.Fatal("json must stream and sarif collect for this test to compare the two")
	}
	// Snapshots only: hosts collected from a root would differ in
	// collected_at between the two runs.
	snaps := nightlyFleet(t, "1")
	// A host with pods: finding keys name the pod.
	if r := runCLI(t, nil, "collect", "--root", gpuRoot, "--pods", shmManifest, "--pods", mpiManifest, "-o", filepath.Join(snaps, "pods-host.json")); r.code != exitOK {
		t.Fatalf("collect: exit %d\n%s", r.code, r.stderr)
	}
	dir := t.TempDir()
	file := writeWaivers(t, dir, `waivers:
  - rule: hugetlb-cma-on-gpu
    fleet: gpu-training
    hosts: ["gpu-a-00[1-3]"]
    owner: alice@example.com
    justification: kernel rollout
    expires: 2099-09-30
  - rule: thp-always
    fleet: "*"
    hosts: ["web-0[12]"]
    owner: carol@example.com
    justification: left over from a benchmark
    expires: 2099-12-31
  - rule: numa-balancing-enabled
    fleet: gpu-training
    owner: erin@example.com
    justification: measured harmless
    expires: 2099-12-31
  - rule: tcp-tw-recycle
    fleet: "*"
    owner: bob@example.com
    justification: legacy image
    expires: 2020-01-31
  - rule: no-such-rule
    fleet: "*"
    owner: dave@example.com
    justification: stale
    expires: 2099-01-01
`)
	audit := func(format string, record bool) (rows map[string][][]any, report []byte) {
		out := filepath.Join(t.TempDir(), "out."+format)
		args := []string{"audit", "--snapshots", snaps, "--waivers", file, "--format", format, "-o", out, "--fail-on", "none"}
		path := filepath.Join(t.TempDir(), "store.db")
		if record {
			args = append(args, "--record", "--store", path)
		}
		if r := runCLI(t, nil, args...); r.code != exitOK {
			t.Fatalf("audit --format %s: exit %d\n%s", format, r.code, r.stderr)
		}
		report, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if record {
			rows = dumpStoreRows(t, path)
		}
		return rows, report
	}
	streamed, streamedReport := audit("json", true)
	collected, _ := audit("sarif", true)
	if diff := cmp.Diff(collected, streamed); diff != "" {
		t.Errorf("stored rows (-collected +streamed):\n%s", diff)
	}
	_, plainReport := audit("json", false)
	if diff := cmp.Diff(string(plainReport), string(streamedReport)); diff != "" {
		t.Errorf("json report (-not recorded +recorded):\n%s", diff)
	}

	// What the comparison covered.
	waived, pods := 0, 0
	for _, f := range streamed["findings"] {
		waived += int(f[7].(int64))
		if strings.HasPrefix(f[2].(string), "pod-") {
			pods++
		}
	}
	var failing int64
	for _, p := range streamed["run_trend"] {
		failing += p[3].(int64)
	}
	if waived == 0 || waived == len(streamed["findings"]) || failing == 0 || len(streamed["run_hosts"]) < 10 {
		t.Errorf("%d findings (%d waived), %d hosts, %d failing in the trend: the fixture lost its coverage",
			len(streamed["findings"]), waived, len(streamed["run_hosts"]), failing)
	}
	if pods == 0 {
		t.Error("no pod finding: the pods host lost its pods")
	}
}

// dumpStoreRows reads every table of a store but the times and the writer,
// which differ between two recordings of one audit.
func dumpStoreRows(t *testing.T, path string) map[string][][]any {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path, store.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	skip := map[string]bool{"started_at": true, "finished_at": true, "writer": true, "stored_at": true}
	out := map[string][][]any{}
	for table, order := range map[string]string{"runs": "id", "run_hosts": "run_id, seq", "findings": "run_id, seq", "blobs": "hash", "run_trend": "run_id, fleet"} {
		rows, err := db.QueryContext(ctx, `SELECT * FROM `+table+` ORDER BY `+order)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var row []any
			for i, c := range cols {
				if !skip[c] {
					row = append(row, vals[i])
				}
			}
			out[table] = append(out[table], row)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(out["runs"]) != 1 || out["runs"][0][1] != store.Complete {
		t.Fatalf("runs %v, want one complete", out["runs"])
	}
	return out
}
