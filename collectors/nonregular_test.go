package collectors

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// copyFixture copies a fixture host (links included) into a temp dir that
// a test may change.
func copyFixture(t *testing.T, host string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), host)
	if err := os.CopyFS(root, os.DirFS(filepath.Join(fixtureHosts, host))); err != nil {
		t.Fatal(err)
	}
	return root
}

// collectGuarded collects root, failing the test if Collect does not return:
// a blocked open cannot be cancelled, so the timeout is only a hang guard.
func collectGuarded(t *testing.T, ctx context.Context, target Target, opts Options) *snapshot.Snapshot {
	t.Helper()
	type result struct {
		snap *snapshot.Snapshot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		snap, err := Collect(ctx, target, opts)
		done <- result{snap, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.snap
	case <-time.After(2 * time.Minute):
		t.Fatal("Collect did not return: blocked on a file")
		return nil
	}
}

// TestCollectRefusesNonRegularFiles replaces one file or directory of a
// fixture host with a FIFO or a device: that path becomes a collection
// error naming it, collection never blocks, and the rest of the host is
// collected as before.
func TestCollectRefusesNonRegularFiles(t *testing.T) {
	const host = "gpu-node"
	opts := fixtureOptions(host)
	baseline := collectGuarded(t, context.Background(), Target{Files: Dir(copyFixture(t, host))}, opts)
	mkfifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	mkzero := func(p string) error {
		// /dev/zero's numbers: a read would never end.
		return syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|5)
	}
	for _, tc := range []struct {
		name      string
		path      string // in the root; replaced
		make      func(string) error
		collector string
		kind      string
	}{
		{"FIFO cmdline", "proc/cmdline", mkfifo, "boot", "FIFO"},
		{"FIFO sysctl.d file", "etc/sysctl.d/60-gpu-training.conf", mkfifo, "sysctl", "FIFO"},
		{"FIFO sysctl.d", "etc/sysctl.d", mkfifo, "sysctl", "FIFO"},
		{"FIFO limits.conf", "etc/security/limits.conf", mkfifo, "limits", "FIFO"},
		{"FIFO process comm", "proc/1021/comm", mkfifo, "processes", "FIFO"},
		{"FIFO GPU information", "proc/driver/nvidia/gpus/0000:1b:00.0/information", mkfifo, "nvidia", "FIFO"},
		{"device cmdline", "proc/cmdline", mkzero, "boot", "character device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyFixture(t, host)
			p := filepath.Join(root, filepath.FromSlash(tc.path))
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(p); err != nil {
				t.Skipf("cannot make a %s here: %v", tc.kind, err)
			}
			snap := collectGuarded(t, context.Background(), Target{Files: Dir(root)}, opts)
			if snap.Host != baseline.Host {
				t.Errorf("host = %q, want %q", snap.Host, baseline.Host)
			}
			var got *snapshot.CollectionError
			var others []snapshot.CollectionError
			for i, e := range snap.Errors {
				if e.Collector == tc.collector && e.Path == "/"+tc.path {
					got = &snap.Errors[i]
				} else {
					others = append(others, e)
				}
			}
			if got == nil {
				t.Fatalf("no %s error for /%s; errors: %+v", tc.collector, tc.path, snap.Errors)
			}
			if want := "not a regular file (" + tc.kind + ")"; !strings.Contains(got.Reason, want) {
				t.Errorf("reason = %q, want it to say %q", got.Reason, want)
			}
			// One file's problem stays that file's: no other collector lost
			// anything it read before.
			if diff := cmp.Diff(baseline.Errors, others, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("other collection errors changed (-baseline +got):\n%s", diff)
			}
			if len(snap.Sources) == 0 || snap.OS.ID != baseline.OS.ID {
				t.Errorf("the rest of the host was not collected: %d sources, os %q", len(snap.Sources), snap.OS.ID)
			}
		})
	}
}

// TestReadCappedRefusesDeviceFromAnySource: a Source whose Open hands back
// a device still never has it read.
func TestReadCappedRefusesDeviceFromAnySource(t *testing.T) {
	src := FS(fstest.MapFS{"dev/pipe": {Mode: fs.ModeNamedPipe}, "etc/hostname": {Data: []byte("h\n")}})
	if _, err := readCapped(src, "/dev/pipe", 1<<10); !errors.Is(err, safeio.ErrNotRegular) {
		t.Errorf("readCapped(FIFO in a MapFS) = %v, want ErrNotRegular", err)
	}
	if data, err := readCapped(src, "/etc/hostname", 1<<10); err != nil || string(data) != "h\n" {
		t.Errorf("readCapped(regular) = %q, %v", data, err)
	}
}

// TestDirReadsDevNullAsEmpty: a configuration file masked by a link to
// /dev/null on a live host reads as empty instead of failing.
func TestDirReadsDevNullAsEmpty(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip(err)
	}
	data, err := readCapped(Dir("/"), os.DevNull, 1<<10)
	if err != nil || len(data) != 0 {
		t.Errorf("readCapped(/dev/null) = %q, %v; want empty", data, err)
	}
	if _, err := readCapped(Dir("/"), "/dev/zero", 1<<10); !errors.Is(err, safeio.ErrNotRegular) {
		t.Errorf("readCapped(/dev/zero) = %v, want ErrNotRegular", err)
	}
}

// TestCollectCancelled: a cancelled context stops a collection before the
// next family and is the error result.
func TestCollectCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Collect(ctx, fixtureTarget("gpu-node"), fixtureOptions("gpu-node"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Collect(cancelled) = %v, want context.Canceled", err)
	}
}

// TestCollectPodsRefusesNonRegularFiles: a FIFO given as a --pods file, or
// in a --pods directory, and a link to /dev/zero there, are collection
// errors naming them; the other manifests are read.
func TestCollectPodsRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	writeFixtureFile(t, filepath.Join(jobs, "a.yaml"), "kind: Pod\nmetadata: {name: a}\n")
	fifo, inDir := filepath.Join(dir, "pods.json"), filepath.Join(jobs, "b.yaml")
	for _, p := range []string{fifo, inDir} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	zero := filepath.Join(jobs, "c.json")
	linkFixture(t, "/dev/zero", zero)

	opts := fixtureOptions("gpu-node")
	opts.Hostname = "h"
	target := Target{Files: Dir(t.TempDir()), Pods: ManifestFiles(fifo, jobs)}
	snap := collectGuarded(t, context.Background(), target, opts)
	if len(snap.Pods) != 1 || snap.Sources["pods.0"].String() != filepath.Join(jobs, "a.yaml")+":1" {
		t.Errorf("pods = %v, sources %v; want a.yaml's pod", snap.Pods, snap.Sources)
	}
	var podErrs []snapshot.CollectionError
	for _, e := range snap.Errors {
		if e.Collector == "pods" {
			podErrs = append(podErrs, e)
		}
	}
	want := []snapshot.CollectionError{
		{Collector: "pods", Path: inDir, Reason: "open: not a regular file (FIFO)"},
		{Collector: "pods", Path: zero, Reason: "open: not a regular file (character device)"},
		{Collector: "pods", Path: fifo, Reason: "open: not a regular file (FIFO)"},
	}
	if diff := cmp.Diff(want, podErrs); diff != "" {
		t.Errorf("pod errors (-want +got):\n%s", diff)
	}
}

// TestCollectUnreadableRoot: a root that cannot be listed is one "source"
// error naming the root, not a snapshot of per-file failures.
func TestCollectUnreadableRoot(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	target := Target{Origin: snapshot.Origin{Kind: "local", Root: missing}, Files: Dir(missing)}
	snap := collectGuarded(t, context.Background(), target, Options{})
	want := []snapshot.CollectionError{{Collector: snapshot.CollectorSource, Path: missing, Reason: "cannot read the root: no such file or directory"}}
	if diff := cmp.Diff(want, snap.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if e := Unread(snap); e == nil || e.Path != missing {
		t.Errorf("Unread = %+v, want the root error", e)
	}
	if len(snap.Sources) != 0 {
		t.Errorf("facts collected from an unreadable root: %v", snap.Sources)
	}
}

// TestDirReadsLivePseudoFiles: /proc and /sys files claim a size of 0 or
// 4096 but are regular files; the type check keeps reading them to EOF.
func TestDirReadsLivePseudoFiles(t *testing.T) {
	for _, name := range []string{"/proc/self/status", "/proc/cmdline", "/proc/sys/kernel/hostname", "/sys/kernel/mm/transparent_hugepage/enabled"} {
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(name); err != nil {
				t.Skip(err)
			}
			data, err := readCapped(Dir("/"), name, DefaultMaxFileSize)
			if err != nil || len(data) == 0 {
				t.Errorf("readCapped(%s) = %d bytes, %v; want its contents", name, len(data), err)
			}
		})
	}
}

// cancellingFS cancels a context when a file is opened in it.
type cancellingFS struct {
	fs.FS
	cancel context.CancelFunc
}

func (c cancellingFS) Open(name string) (fs.File, error) {
	c.cancel()
	return c.FS.Open(name)
}

// TestCollectCancelledInLastFamily: a cancel while the last family (pods)
// runs is the error result, not a snapshot that looks complete.
func TestCollectCancelledInLastFamily(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := &fstest.MapFile{Data: []byte("kind: Pod\nmetadata: {name: p}\n")}
	opts := fixtureOptions("gpu-node")
	target := fixtureTarget("gpu-node")
	target.Pods = ManifestsIn(cancellingFS{fstest.MapFS{"a.yaml": pod, "b.yaml": pod}, cancel}, "a.yaml", "b.yaml")
	snap, err := Collect(ctx, target, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Collect = %d pods, %v; want context.Canceled", len(snap.Pods), err)
	}
}
