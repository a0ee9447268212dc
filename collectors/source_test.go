package collectors

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirResolvesLinksInsideRoot checks chroot semantics: an absolute link
// target means the root's path, never the machine's.
func TestDirResolvesLinksInsideRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeFixtureFile(t, filepath.Join(outside, "secret"), "outside")
	writeFixtureFile(t, filepath.Join(root, "etc/sysctl.conf"), "vm.swappiness = 10\n")
	writeFixtureFile(t, filepath.Join(root, "usr/lib/libnccl.so.2.21.5"), "lib")
	linkFixture(t, "../sysctl.conf", filepath.Join(root, "etc/sysctl.d/99-sysctl.conf"))
	linkFixture(t, "/etc/sysctl.conf", filepath.Join(root, "etc/sysctl.d/98-abs.conf"))
	linkFixture(t, "libnccl.so.2.21.5", filepath.Join(root, "usr/lib/libnccl.so.2"))
	linkFixture(t, "usr/lib", filepath.Join(root, "lib"))
	linkFixture(t, filepath.Join(outside, "secret"), filepath.Join(root, "etc/escape"))
	linkFixture(t, "../../../../../../../.."+outside+"/secret", filepath.Join(root, "etc/escape-rel"))
	linkFixture(t, "loop-b", filepath.Join(root, "etc/loop-a"))
	linkFixture(t, "loop-a", filepath.Join(root, "etc/loop-b"))

	src := Dir(root)
	for name, want := range map[string]string{
		"/etc/sysctl.d/99-sysctl.conf": "vm.swappiness = 10\n",
		"/etc/sysctl.d/98-abs.conf":    "vm.swappiness = 10\n",
		"/lib/libnccl.so.2":            "lib",
	} {
		got, err := readCapped(src, name, 1<<10)
		if err != nil || string(got) != want {
			t.Errorf("read %s = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"/etc/escape", "/etc/escape-rel"} {
		if got, err := readCapped(src, name, 1<<10); err == nil {
			t.Errorf("read %s escaped the root: %q", name, got)
		} else if strings.Contains(err.Error(), root) {
			t.Errorf("error %q leaks the local root path", err)
		}
	}
	if _, err := readCapped(src, "/etc/loop-a", 1<<10); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("link loop: err = %v", err)
	}
	target, err := src.ReadLink(rel("/usr/lib/libnccl.so.2"))
	if err != nil || target != "libnccl.so.2.21.5" {
		t.Errorf("ReadLink = %q, %v", target, err)
	}
	if _, err := src.Open(".."); err == nil {
		t.Error("Open(..) succeeded")
	}
}

func TestReadCappedReadsToEOFWithCap(t *testing.T) {
	root := t.TempDir()
	writeFixtureFile(t, filepath.Join(root, "big"), strings.Repeat("x", 100))
	if _, err := readCapped(Dir(root), "/big", 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
	if got, err := readCapped(Dir(root), "/big", 100); err != nil || len(got) != 100 {
		t.Errorf("got %d bytes, %v", len(got), err)
	}
	if _, err := readCapped(Dir(root), "/missing", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: err = %v, want ErrNotExist", err)
	}
}

func writeFixtureFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func linkFixture(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
