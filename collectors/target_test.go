package collectors

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// TestLocalRunsCommandsOnlyOnTheLiveRoot: the local target's exec policy,
// which collect and audit --root share.
func TestLocalRunsCommandsOnlyOnTheLiveRoot(t *testing.T) {
	abs, err := filepath.Abs(filepath.Join(fixtureHosts, "gpu-node"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		root   string
		noExec bool
		want   bool
	}{
		{"/", false, true},
		{"/.", false, true},
		{"/", true, false},
		{abs, false, false},
		{filepath.Join(fixtureHosts, "gpu-node"), false, false},
		{"/mnt/image", false, false},
	} {
		target, err := Local(tt.root, LocalOptions{NoExec: tt.noExec})
		if err != nil {
			t.Fatal(err)
		}
		if got := target.Exec != nil; got != tt.want {
			t.Errorf("Local(%q, no-exec %v) runs commands: %v, want %v", tt.root, tt.noExec, got, tt.want)
		}
		if want, _ := filepath.Abs(tt.root); target.Origin != (snapshot.Origin{Kind: "local", Root: want}) {
			t.Errorf("Local(%q) origin = %+v", tt.root, target.Origin)
		}
	}
}

func TestRunLocalCommand(t *testing.T) {
	ctx := context.Background()
	t.Setenv("FLEETAUDIT_TEST_SECRET", "hunter2")
	out, err := runLocalCommand(ctx, "sh", "-c", `printf 'a, Enabled\n'; echo "${FLEETAUDIT_TEST_SECRET:-unset}"`)
	if err != nil || string(out) != "a, Enabled\nunset\n" {
		t.Errorf("output %q, error %v (the environment must not reach the command)", out, err)
	}
	_, err = runLocalCommand(ctx, "sh", "-c", `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9`)
	if err == nil || err.Error() != "sh: exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." {
		t.Errorf("error = %v", err)
	}
	_, err = runLocalCommand(ctx, "sh", "-c", `echo "No devices were found"; exit 6`)
	if err == nil || err.Error() != "sh: exit status 6: No devices were found" || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error = %v", err)
	}
	_, err = runLocalCommand(ctx, "fleetaudit-no-such-command")
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing binary: %v, want exec.ErrNotFound", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := runLocalCommand(short, "sleep", "30"); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("sleep under a 100ms deadline: %v after %s", err, time.Since(start))
	}
}

func TestLookCommandBeyondPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	got, err := lookCommand("nvidia-smi", []string{"/does/not/exist", dir})
	if err != nil || got != filepath.Join(dir, "nvidia-smi") {
		t.Errorf("lookCommand = %q, %v", got, err)
	}
	if _, err := lookCommand("nvidia-smi", []string{"/does/not/exist"}); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("not found: %v, want exec.ErrNotFound", err)
	}
}

// TestCollectLocalTarget: Collect over Local gives the golden snapshot's
// facts, and the target's origin is what the snapshot records.
func TestCollectLocalTarget(t *testing.T) {
	target, err := Local(filepath.Join(fixtureHosts, "gpu-node"), LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Collect(context.Background(), target, fixtureOptions("gpu-node"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Collect(context.Background(), fixtureTarget("gpu-node"), fixtureOptions("gpu-node"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != (snapshot.Origin{Kind: "local", Root: target.Origin.Root, Collector: "test"}) {
		t.Errorf("source = %+v", got.Source)
	}
	got.Source = want.Source
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(snapshot.Snapshot{})); diff != "" {
		t.Errorf("Local target (-fixture +local):\n%s", diff)
	}
}

// TestChrootResolvesLinksInAnyTree: an fs.FS source resolves links with the
// same chroot resolver as Dir (absolute targets from its root, ".." never
// above it), where fstest.MapFS alone refuses absolute targets.
func TestChrootResolvesLinksInAnyTree(t *testing.T) {
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Mode: fs.ModeSymlink | 0o777, Data: []byte(target)}
	}
	tree := fstest.MapFS{
		"usr/lib/os-release": {Data: []byte("ID=rocky\n")},
		"etc/os-release":     link("/usr/lib/os-release"),
		"etc/escape":         link("../../../../usr/lib/os-release"),
		"lib":                link("usr/lib"),
		"etc/loop":           link("loop"),
	}
	src := FS(tree)
	for _, name := range []string{"/etc/os-release", "/etc/escape", "/lib/os-release"} {
		data, err := readCapped(src, name, DefaultMaxFileSize)
		if err != nil || string(data) != "ID=rocky\n" {
			t.Errorf("%s = %q, %v", name, data, err)
		}
		if real, err := RealPath(src, name); err != nil || real != "/usr/lib/os-release" {
			t.Errorf("RealPath(%s) = %q, %v", name, real, err)
		}
	}
	if _, err := readCapped(src, "/etc/loop", DefaultMaxFileSize); !errors.Is(err, errTooManyLinks) {
		t.Errorf("a link to itself: %v, want %v", err, errTooManyLinks)
	}
	if info, err := src.Lstat("lib"); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(lib) = %v, %v; want the link", info, err)
	}
}
