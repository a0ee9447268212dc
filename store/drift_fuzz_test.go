package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// FuzzDiffFacts compares any two snapshot documents the store could hold:
// never a panic, nothing changed between a document and itself, and every
// change names a fact and a known kind.
func FuzzDiffFacts(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(exampleFleet, "snapshots", "*.json"))
	for i := 0; i+1 < len(seeds) && i < 6; i += 2 {
		a, errA := os.ReadFile(seeds[i])
		b, errB := os.ReadFile(seeds[i+1])
		if errA != nil || errB != nil {
			f.Fatal(errA, errB)
		}
		f.Add(a, b)
	}
	f.Add([]byte(`{"schema":"fleetaudit.snapshot/v1","host":"a","errors":[]}`), []byte(`{"schema":"fleetaudit.snapshot/v1","host":"a","errors":[{"collector":"source","path":"/","reason":"gone"}]}`))
	kinds := []string{FactChanged, FactAdded, FactRemoved, FactMoved, FactNotCollected}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		from, err := snapshot.DecodeDocument(a)
		if err != nil {
			return
		}
		to, err := snapshot.DecodeDocument(b)
		if err != nil {
			return
		}
		if same := diffFacts(from, from); len(same) != 0 {
			t.Fatalf("a document differs from itself: %+v", same)
		}
		for _, c := range diffFacts(from, to) {
			if c.Fact == "" || !slices.Contains(kinds, c.Change) {
				t.Fatalf("change %+v", c)
			}
		}
	})
}
