package factdiff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// FuzzDiff compares any two snapshot documents the store could hold:
// never a panic, nothing changed between a document and itself, and every
// change names a fact and a known kind.
func FuzzDiff(f *testing.F) {
	// Real snapshots cut to a few sections and their sources: whole ones
	// (50 KB each) leave the fuzzer mutating mostly bytes nobody reads.
	small := func(file string) []byte {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			f.Fatal(err)
		}
		keep := []string{"schema", "host", "boot", "logind", "memory", "errors"}
		out := map[string]any{}
		for _, k := range keep {
			if v, ok := doc[k]; ok {
				out[k] = v
			}
		}
		sources := map[string]any{}
		for k, v := range doc["sources"].(map[string]any) {
			for _, sec := range keep {
				if strings.HasPrefix(k, sec+".") {
					sources[k] = v
				}
			}
		}
		out["sources"] = sources
		b, err = json.Marshal(out)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "examples", "fleet", "snapshots", "*.json"))
	for i := 0; i+1 < len(seeds) && i < 6; i += 2 {
		f.Add(small(seeds[i]), small(seeds[i+1]))
	}
	f.Add([]byte(`{"schema":"fleetaudit.snapshot/v1","host":"a","errors":[]}`), []byte(`{"schema":"fleetaudit.snapshot/v1","host":"a","errors":[{"collector":"source","path":"/","reason":"gone"}]}`))
	kinds := []string{Changed, Added, Removed, Moved, NotCollected}
	// A simple coverage: a fact's absence is known where its section is
	// there; sources as the document lists them.
	cov := Coverage{
		AbsenceKnown: func(doc map[string]any, fact string) bool {
			section, _, _ := strings.Cut(fact, ".")
			_, ok := doc[section]
			return ok
		},
		Source: func(doc map[string]any, fact string) string {
			sources, _ := doc["sources"].(map[string]any)
			s, _ := sources[fact].(string)
			return s
		},
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		from, err := snapshot.DecodeDocument(a)
		if err != nil {
			return
		}
		to, err := snapshot.DecodeDocument(b)
		if err != nil {
			return
		}
		if same := Diff(from, from, cov); len(same) != 0 {
			t.Fatalf("a document differs from itself: %+v", same)
		}
		for _, c := range Diff(from, to, cov) {
			if c.Fact == "" || !slices.Contains(kinds, c.Change) {
				t.Fatalf("change %+v", c)
			}
		}
	})
}
