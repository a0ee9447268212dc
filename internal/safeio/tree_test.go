package safeio

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// fifoTree is a directory holding a regular file, a subdirectory, a FIFO,
// and links to the FIFO and to /dev/zero.
func fifoTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("kind: Pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for name, target := range map[string]string{"fifolink.yaml": "fifo.yaml", "zero.yaml": "/dev/zero", "fifodir": "fifo.yaml"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestOpenFileOrDir(t *testing.T) {
	dir := fifoTree(t)
	for _, tc := range []struct {
		name string
		kind string // "" when the open succeeds
	}{
		{"a.yaml", ""},
		{"sub", ""},
		{"fifo.yaml", "FIFO"},
		{"fifolink.yaml", "FIFO"},
		{"zero.yaml", "character device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := OpenFileOrDir(filepath.Join(dir, tc.name))
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("OpenFileOrDir = %v, want it opened", err)
				}
				f.Close()
				return
			}
			if err == nil {
				f.Close()
			}
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "("+tc.kind+")") {
				t.Fatalf("OpenFileOrDir = %v, want ErrNotRegular (%s)", err, tc.kind)
			}
		})
	}
}

func TestReadDirRefusesFIFO(t *testing.T) {
	dir := fifoTree(t)
	if _, err := ReadDir(filepath.Join(dir, "fifodir")); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadDir(link to a FIFO) = %v, want ErrNotRegular", err)
	}
	entries, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "a.yaml fifo.yaml fifodir fifolink.yaml sub zero.yaml"; got != want {
		t.Errorf("ReadDir = %s, want %s (sorted)", got, want)
	}
}

func TestDirFS(t *testing.T) {
	dir := fifoTree(t)
	fsys := DirFS(dir)
	for _, name := range []string{"fifo.yaml", "fifolink.yaml", "zero.yaml"} {
		f, err := fsys.Open(name)
		if err == nil {
			f.Close()
		}
		var pe *fs.PathError
		if !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || pe.Path != name {
			t.Errorf("Open(%s) = %v, want ErrNotRegular naming %s", name, err, name)
		}
	}
	if _, err := fs.ReadDir(fsys, "fifodir"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadDir(fifodir) = %v, want ErrNotRegular", err)
	}
	f, err := fsys.Open("a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "kind: Pod\n" {
		t.Errorf("a.yaml = %q, %v", data, err)
	}
	if _, err := fsys.Open("../x"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Open(../x) = %v, want fs.ErrInvalid", err)
	}
	// Only the regular file and the directory: fstest reads every entry.
	clean := t.TempDir()
	if err := os.WriteFile(filepath.Join(clean, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(clean, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(DirFS(clean), "a", "d", "d/e"); err != nil {
		t.Error(err)
	}
}
