package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// TestLoadRefusesNonRegularFiles: --inventory naming a FIFO (which blocked
// in open forever) or a link to /dev/zero (read up to the cap, then garbage)
// fails at once with an error naming the file and its type.
func TestLoadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hosts.ini")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "hosts.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, kind string
	}{
		{fifo, "FIFO"},
		{zero, "character device"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Load(tc.path)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute): // hang guard only
				t.Fatalf("Load(%s) did not return", tc.kind)
			}
			if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), "("+tc.kind+")") {
				t.Errorf("Load = %v, want ErrNotRegular naming %s (%s)", err, tc.path, tc.kind)
			}
		})
	}
}

// TestLoadCap: a file over the cap is refused as invalid.
func TestLoadCap(t *testing.T) {
	big := filepath.Join(t.TempDir(), "hosts.ini")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxFileBytes+1); err != nil { // sparse
		t.Fatal(err)
	}
	if _, err := Load(big); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load(over the cap) = %v, want ErrInvalid: larger than", err)
	}
}
