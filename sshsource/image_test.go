package sshsource

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// A live host always has procfs on /proc; a root read over SSH whose /proc
// is empty (the mount point of an image) is not taken for an image: its
// missing running state is reported, as for a broken live host.
func TestSSHRootWithoutProcIsNoImage(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"proc", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("ID=debian\nVERSION_ID=\"12\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSSHD(t)
	d := NewDialer(s.options())
	defer d.Close()
	r := d.Collect(context.Background(), s.host("no-proc", root))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Snapshot.Source.Image {
		t.Error("an SSH host became an offline image")
	}
	if !slices.ContainsFunc(r.Snapshot.Errors, func(e snapshot.CollectionError) bool { return e.Collector == "modules" && e.Path == "/proc/modules" }) {
		t.Errorf("no error for the live host's missing /proc/modules: %+v", r.Snapshot.Errors)
	}
}
