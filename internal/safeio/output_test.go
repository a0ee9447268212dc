package safeio

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// WriteOutput replaces a file whole, keeping its mode, writes through a
// link to it, and refuses a directory with an UnwritableError naming it.
func TestWriteOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "report.json")
	if err := os.WriteFile(file, []byte("old, longer than the new one"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) error {
		return WriteOutput(context.Background(), name, func(w io.Writer) error {
			_, err := io.WriteString(w, text)
			return err
		})
	}
	if err := write(link, "new"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	info, _ := os.Lstat(file)
	if string(data) != "new" || info.Mode().Perm() != 0o640 {
		t.Errorf("file holds %q with mode %v, want \"new\" with 0640", data, info.Mode().Perm())
	}
	if l, _ := os.Lstat(link); l.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d entries in the directory, want the file and the link (no temp file left)", len(entries))
	}
	failed := errors.New("render failed")
	if err := WriteOutput(context.Background(), file, func(io.Writer) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("a failed render: %v", err)
	}
	if data, _ := os.ReadFile(file); string(data) != "new" {
		t.Errorf("a failed render left %q", data)
	}
	for _, err := range []error{write(dir, "x"), CheckOutput(dir)} {
		var uw *UnwritableError
		if !errors.As(err, &uw) || err.Error() != dir+": a directory; name a file, a FIFO or a character device" {
			t.Errorf("a directory: %v", err)
		}
	}
}
