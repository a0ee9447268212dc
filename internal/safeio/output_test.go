package safeio

import (
	"bytes"
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

// A file written in many pieces, over several writeback chunks and in
// sizes that do not divide one, is replaced by exactly what was written.
func TestWriteOutputLargeFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "report.json")
	want := make([]byte, 3*writebackChunk+12345)
	for i := range want {
		want[i] = byte(i * 7 / 5)
	}
	err := WriteOutput(context.Background(), file, func(w io.Writer) error {
		for rest, n := want, 1; len(rest) > 0; n = (n*3 + 1) % (1 << 20) {
			k := min(len(rest), n)
			if _, err := w.Write(rest[:k]); err != nil {
				return err
			}
			rest = rest[k:]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes, not the %d written", len(got), len(want))
	}
}
