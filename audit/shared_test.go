package audit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"github.com/fleetaudit/fleetaudit/internal/oddsnap"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// An audit shares evaluations between hosts (equal files but for the name,
// equal inputs of a rule) and streams its findings; every finding must be
// what evaluating each host on its own gives. Compared on fleets where
// hosts differ in many ways (bench/gen -unique), where most are equal
// (the default generator), where equal content lands in other fleets by
// name (and in no fleet, where a rule reads the host's name), where
// shared sections hold members of the wrong type or files do not split
// into sections (writeOddSnapshots), and on the example fleets.
func TestSharedEvaluationIsPerHostEvaluation(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	unique, repeated := filepath.Join(tmp, "unique"), filepath.Join(tmp, "repeated")
	if err := fleetgen.Generate(fleetgen.Options{N: 400, Dir: unique, Roots: "../testdata/hosts", Seed: 7, Unique: true}); err != nil {
		t.Fatal(err)
	}
	if err := fleetgen.Generate(fleetgen.Options{N: 400, Dir: repeated, Roots: "../testdata/hosts", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	// The same content under names of other fleets and of none.
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
	for _, dir := range []string{unique, repeated, odd, exampleSnapshots, "../examples/snapshots"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			res, err := Run(context.Background(), Options{Fleets: set, Snapshots: []string{dir}})
			if err != nil {
				t.Fatal(err)
			}
			want := perHost(t, set, dir)
			if len(res.Findings) != len(want) {
				t.Errorf("%d findings, evaluating each host alone gives %d", len(res.Findings), len(want))
			}
			for i := range min(len(res.Findings), len(want)) {
				got, _ := json.Marshal(res.Findings[i])
				exp, _ := json.Marshal(want[i])
				if !bytes.Equal(got, exp) {
					t.Fatalf("finding %d:\n got %s\nwant %s", i, got, exp)
				}
			}
			// Loaded (the history store's hook) sees each host's own
			// document, also where the host shared its evaluation.
			var mu sync.Mutex
			seen := map[string]map[string]any{}
			loaded := func(in fleetrun.HostInput, doc, _ map[string]any) {
				mu.Lock()
				defer mu.Unlock()
				seen[in.Origin] = doc
			}
			streamed, err := Run(context.Background(), Options{Fleets: set, Snapshots: []string{dir}, Stream: true, Loaded: loaded})
			if err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			if len(seen) != len(files) {
				t.Errorf("Loaded saw %d hosts of %d", len(seen), len(files))
			}
			for _, f := range files {
				own, err := fleetrun.SnapshotFile(f).Load(context.Background())
				if err != nil {
					continue // an unreadable file's document is made up (unreadDoc)
				}
				if !equalJSON(seen[f], own) {
					t.Fatalf("Loaded saw %s as another document than its own", f)
				}
			}
			i := 0
			for f := range streamed.All() {
				if i >= len(want) || !equalJSON(*f, want[i]) {
					t.Fatalf("streamed finding %d differs", i)
				}
				i++
			}
			if i != len(want) || streamed.Summary.Findings != len(want) {
				t.Errorf("streamed %d findings, summary %d, want %d", i, streamed.Summary.Findings, len(want))
			}
			if !equalJSON(streamed.Summary, res.Summary) {
				t.Errorf("streamed summary %+v, collected %+v", streamed.Summary, res.Summary)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// perHost audits each snapshot of dir on its own (EvalHost), then each
// fleet's projections (EvalFleet), and orders the findings for reading.
func perHost(t *testing.T, set *fleets.Set, dir string) []policies.Finding {
	t.Helper()
	ctx := context.Background()
	engine, err := fleets.NewEngine(ctx, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	resolver := newFleetResolver(set, nil)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshots in %s: %v", dir, err)
	}
	slices.Sort(files)
	var out []policies.Finding
	projs := map[string][]map[string]any{}
	seen := map[[2]string]bool{}
	for _, file := range files {
		doc, err := snapshot.ReadDocument(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		host, _ := doc["host"].(string)
		if host == "" {
			host = strings.TrimSuffix(filepath.Base(file), ".json")
			doc["host"] = host
		}
		fleet := resolver.fleet(host, doc)
		fs, err := engine.EvalHost(ctx, doc, fleet)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, fs...)
		// A name used twice in a fleet counts its first file only.
		if key := [2]string{fleet, host}; !unreadDoc(doc) && !seen[key] {
			seen[key] = true
			projs[fleet] = append(projs[fleet], engine.Project(doc))
		}
	}
	for _, fleet := range slices.Sorted(func(yield func(string) bool) {
		for k := range projs {
			if !yield(k) {
				return
			}
		}
	}) {
		fs, err := engine.EvalFleet(ctx, fleet, projs[fleet])
		if err != nil {
			t.Fatalf("fleet %q: %v", fleet, err)
		}
		out = append(out, fs...)
	}
	slices.SortStableFunc(out, func(a, b policies.Finding) int {
		return cmp.Or(
			cmp.Compare(a.Fleet, b.Fleet),
			-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
			cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Rule, b.Rule),
		)
	})
	return out
}

// unreadDoc reports whether nothing of the host was read.
func unreadDoc(doc map[string]any) bool {
	errs, _ := doc["errors"].([]any)
	for _, x := range errs {
		if e, _ := x.(map[string]any); e["collector"] == snapshot.CollectorSource {
			return true
		}
	}
	return false
}
