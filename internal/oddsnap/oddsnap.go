// Package oddsnap writes snapshot files of odd shapes, from real ones, for
// the tests that hold decoding by shared sections (audit, policies/fleetrun)
// to a whole decode.
package oddsnap

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Write writes, from the snapshots in dir, files that decoding
// by shared sections must read exactly as a whole decode does: members of
// the wrong type in sections other hosts share (removed, reported in
// errors), a section of the wrong type, collection errors, a member whose
// name holds a dot or needs an escape (such files are decoded whole),
// sources of the wrong type, and a second "host" member. Each goes under
// two names, so hosts share it.
func Write(t testing.TB, dir, out string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) < 40 {
		t.Fatalf("snapshots in %s: %d, %v", dir, len(files), err)
	}
	slices.Sort(files)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	edits := []func(doc map[string]any){
		func(doc map[string]any) { SetIn(doc, json.Number("6"), "boot", "running", "params", "hugetlb_cma") },
		func(doc map[string]any) { doc["kernel"] = "oops" },
		func(doc map[string]any) {
			errs, _ := doc["errors"].([]any)
			doc["errors"] = append(errs, map[string]any{"collector": "sysctl", "path": "/proc/sys", "reason": "permission denied"})
		},
		func(doc map[string]any) { doc["x.y"] = map[string]any{"a": "b"}; doc["boot.running"] = "z" },
		func(doc map[string]any) { doc["a<b"] = "escaped on writing" },
		func(doc map[string]any) { SetIn(doc, json.Number("5"), "sources", "boot.running") },
		func(doc map[string]any) {
			SetIn(doc, []any{"x"}, "limits", "effective")
			SetIn(doc, json.Number("1"), "sysctl", "running", "vm.max_map_count")
		},
		func(doc map[string]any) {},
	}
	for i, file := range files[:40] {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := snapshot.DecodeJSON(b, &doc); err != nil {
			t.Fatal(err)
		}
		edits[i%len(edits)](doc)
		host, _ := doc["host"].(string)
		for _, name := range []string{host, host + "-twin"} {
			doc["host"] = name
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			if i%10 == 9 {
				// A second "host" member, which the decoder takes: the
				// twins are equal but for the first.
				b = append(b[:len(b)-1], `,"host":"dup-`+host+`"}`...)
			}
			if err := os.WriteFile(filepath.Join(out, name+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// SetIn sets the member at path of objects that exist.
func SetIn(doc map[string]any, v any, path ...string) {
	m := doc
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	m[path[len(path)-1]] = v
}
