package collectors

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

var update = flag.Bool("update", false, "rewrite golden snapshots in testdata/golden")

const fixtureHosts = "../testdata/hosts"

// fixtureTarget is the target of a fixture host, as every golden snapshot
// is collected.
func fixtureTarget(root string) Target {
	return Target{
		Origin: snapshot.Origin{Kind: "local", Root: "testdata/hosts/" + root},
		Files:  Dir(filepath.Join(fixtureHosts, root)),
	}
}

// fixtureOptions are the options every golden snapshot is collected with.
func fixtureOptions(root string) Options {
	return Options{
		LimitsDomains: []string{"trainer", "@hpc"},
		Now:           func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		Version:       "test",
	}
}

func fixtureRoots(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(fixtureHosts)
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, e := range entries {
		if e.IsDir() {
			roots = append(roots, e.Name())
		}
	}
	if len(roots) < 4 {
		t.Fatalf("found %d fixture roots in %s, want at least 4", len(roots), fixtureHosts)
	}
	return roots
}

// TestGoldenSnapshots collects each fixture root and compares the whole
// snapshot with its golden file.
func TestGoldenSnapshots(t *testing.T) {
	for _, root := range fixtureRoots(t) {
		t.Run(root, func(t *testing.T) {
			snap, err := Collect(context.Background(), fixtureTarget(root), fixtureOptions(root))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := snapshot.Encode(&got, snap); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", root+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./collectors -run Golden -update)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("snapshot of %s differs from %s (-want +got):\n%s", root, golden, diff)
			}
		})
	}
}

// TestSnapshotInvariants holds for every fixture root: the snapshot round-trips,
// every provenance entry names a fact that exists, and only the garbage root
// has collection errors.
func TestSnapshotInvariants(t *testing.T) {
	for _, root := range fixtureRoots(t) {
		t.Run(root, func(t *testing.T) {
			snap, err := Collect(context.Background(), fixtureTarget(root), fixtureOptions(root))
			if err != nil {
				t.Fatal(err)
			}
			if snap.Host == "" {
				t.Error("no host name collected")
			}
			var buf bytes.Buffer
			if err := snapshot.Encode(&buf, snap); err != nil {
				t.Fatal(err)
			}
			back, err := snapshot.Decode(&buf)
			if err != nil {
				t.Fatalf("snapshot does not decode: %v", err)
			}
			if diff := cmp.Diff(snap, back, cmp.AllowUnexported(snapshot.Snapshot{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip changed the snapshot (-collected +decoded):\n%s", diff)
			}
			doc, err := snapshot.Generic(snap)
			if err != nil {
				t.Fatal(err)
			}
			for fact, src := range snap.Sources {
				if _, ok := snapshot.Lookup(doc, fact); !ok {
					t.Errorf("sources names fact %q (from %s) that the snapshot does not have", fact, src)
				}
				if src.IsZero() {
					t.Errorf("fact %q has an empty source", fact)
				}
			}
			switch {
			case root == "garbage" && len(snap.Errors) == 0:
				t.Error("garbage root collected without errors")
			case root != "garbage":
				for _, e := range snap.Errors {
					t.Errorf("unexpected collection error: %s %s: %s", e.Collector, e.Path, e.Reason)
				}
			}
			for _, e := range snap.Errors {
				if e.Collector == "" || e.Reason == "" || strings.Contains(e.Reason, fixtureHosts) {
					t.Errorf("error entry %+v must name its collector and reason, and not the local root path", e)
				}
			}
		})
	}
}

// sourceTexts is sources as their JSON text.
func sourceTexts(sources map[string]snapshot.Provenance) map[string]string {
	texts := make(map[string]string, len(sources))
	for fact, p := range sources {
		texts[fact] = p.String()
	}
	return texts
}
