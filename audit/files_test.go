package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The listing holds the files filepath.Glob(dir/*.json) finds, in its
// order: names that differ after a common prefix, dotfiles, directories
// named *.json, and names that only look like snapshots.
func TestSnapshotFilesAsGlob(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a.json", "a-b.json", "a.b.json", "a0.json", "A.json", ".hidden.json", "x.JSON",
		"b.json.bak", "b.txt", ".json", "über.json", "z z.json"}
	for i := range 3000 { // more than one batch of names, in no order
		names = append(names, fmt.Sprintf("gpu-%d.json", i*7919%3000))
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(dir, "b.txt")
	l, err := snapshotFiles([]string{dir + "/", single})
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, single)
	got := slices.Collect(l.All())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listing (-glob +got):\n%s", diff)
	}
	if l.Len() != len(want) {
		t.Errorf("Len %d, want %d", l.Len(), len(want))
	}

	empty := t.TempDir()
	if _, err := snapshotFiles([]string{empty}); !errors.Is(err, ErrNoSnapshots) {
		t.Errorf("empty directory: %v, want ErrNoSnapshots", err)
	}
	if _, err := snapshotFiles([]string{filepath.Join(dir, "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v, want not exist", err)
	}
}
