package kube

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// TestReadManifestsRefusesNonRegularFiles: a FIFO or a link to a device
// among the manifests is an error naming it, never waited on or read, and
// the other files are still read.
func TestReadManifestsRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	pod := []byte("kind: Pod\nmetadata: {name: p}\n")
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), pod, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "b.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "c.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d.yaml"), pod, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fsys fs.FS
		root string
		objs []string
		errs []string
	}{
		{"directory", safeio.DirFS(dir), ".", []string{"a.yaml:1", "d.yaml:1"},
			[]string{"b.yaml: open b.yaml: not a regular file (FIFO)", "c.json: open c.json: not a regular file (character device)"}},
		{"FIFO given as the file", safeio.DirFS(dir), "b.yaml", nil, []string{"b.yaml: open b.yaml: not a regular file (FIFO)"}},
		// os.DirFS opens a device (it would block on a FIFO): the type
		// is checked before anything is read.
		{"device through os.DirFS", os.DirFS(dir), "c.json", nil, []string{"c.json: not a regular file (character device)"}},
		{"device in a MapFS", fstest.MapFS{"p.yaml": {Mode: fs.ModeNamedPipe}}, "p.yaml", nil, []string{"p.yaml: not a regular file (FIFO)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, errs := ReadManifests(tc.fsys, tc.root)
			var gotObjs, gotErrs []string
			for _, o := range objs {
				gotObjs = append(gotObjs, fmt.Sprintf("%s:%d", o.File, o.Line))
			}
			for _, err := range errs {
				if !errors.Is(err, safeio.ErrNotRegular) {
					t.Errorf("%v does not wrap safeio.ErrNotRegular", err)
				}
				gotErrs = append(gotErrs, err.Error())
			}
			if diff := cmp.Diff(tc.objs, gotObjs); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.errs, gotErrs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadManifestsCap: a file over the cap is an error, not read whole.
func TestReadManifestsCap(t *testing.T) {
	big := fstest.MapFS{"big.yaml": {Data: []byte(strings.Repeat("#", maxFileSize+1))}}
	if _, errs := ReadManifests(big, "big.yaml"); len(errs) != 1 || !strings.Contains(errs[0].Error(), "larger than 64 MiB") {
		t.Errorf("over the cap: %v", errs)
	}
}
