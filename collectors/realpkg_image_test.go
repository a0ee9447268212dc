package collectors

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// TestRealDebianImageIsOffline collects a Debian 12 root before first boot.
// base-files ships /proc, /sys and /dev as empty directories (mount points,
// see base-files' FAQ and hier(7)): nothing is mounted, so the root is an
// offline image, said once in the snapshot's source. No running state is
// read or written, not even as empty, and no /proc file is reported
// missing; the configuration on disk is collected as on a running host.
func TestRealDebianImageIsOffline(t *testing.T) {
	root, pkgs := debroot.DebianImage(t, "gpu-image")
	for _, p := range pkgs {
		t.Logf("%s %s", p.Name, p.Version)
	}
	if entries, err := os.ReadDir(filepath.Join(root, "proc")); err != nil || len(entries) != 0 {
		t.Fatalf("base-files' /proc: %d entries, %v; want an empty directory", len(entries), err)
	}
	target, err := Local(root, LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	if !target.Origin.Image {
		t.Fatal("Local: a root with an empty /proc is not an image")
	}
	snap, err := Collect(context.Background(), target, fixtureOptions("image"))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Source.Image {
		t.Error("snapshot source does not say image")
	}
	for _, e := range snap.Errors {
		t.Errorf("collection error on the image as installed: %s %s: %s", e.Collector, e.Path, e.Reason)
	}
	for fact := range snap.Sources {
		if snapshot.IsRunningState(fact) {
			t.Errorf("running fact %s has a source on an image: %s", fact, snap.Sources[fact])
		}
	}
	var buf bytes.Buffer
	if err := snapshot.Encode(&buf, snap); err != nil {
		t.Fatal(err)
	}
	doc, err := snapshot.DecodeDocument(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, fact := range snapshot.RunningState {
		if strings.Contains(fact, "*") {
			continue
		}
		if v, ok := snapshot.Lookup(doc, fact); ok {
			t.Errorf("running state %s written for an image: %v", fact, v)
		}
	}

	// What the packages configure: grub2-common's template for
	// /etc/default/grub sets GRUB_CMDLINE_LINUX_DEFAULT="quiet"; systemd's
	// /usr/lib/sysctl.d/50-pid-max.conf sets kernel.pid_max = 4194304;
	// logind.conf ships every setting commented out (RemoveIPC defaults
	// to yes, logind.conf(5)).
	c := snap.Boot.Configured
	if c.Loader != "grub" || !c.Present {
		t.Errorf("configured boot: loader %q present %v, want grub's defaults", c.Loader, c.Present)
	}
	if _, ok := c.Params["quiet"]; !ok || snap.Sources["boot.configured.params.quiet"].String() != "/etc/default/grub:9" {
		t.Errorf("configured params %v (quiet from %s), want quiet from /etc/default/grub:9", c.Params, snap.Sources["boot.configured.params.quiet"])
	}
	if got := snap.Sysctl.Configured["kernel.pid_max"]; got != "4194304" {
		t.Errorf("configured kernel.pid_max = %q, want 4194304 (50-pid-max.conf)", got)
	}
	if !snap.Logind.Installed || snap.Logind.RemoveIPC != "yes" {
		t.Errorf("logind installed %v RemoveIPC %q, want installed with the default yes", snap.Logind.Installed, snap.Logind.RemoveIPC)
	}
	if snap.OS.ID != "debian" || snap.OS.VersionID != "12" {
		t.Errorf("os %s %s, want debian 12", snap.OS.ID, snap.OS.VersionID)
	}
}

// TestImageHasNoProcAtAll: a root without even the /proc directory (a tree
// copied without its mount points) is an image too.
func TestImageHasNoProcAtAll(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("ID=debian\nVERSION_ID=\"12\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := Local(root, LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := Collect(context.Background(), target, fixtureOptions("image"))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Source.Image || len(snap.Errors) != 0 {
		t.Errorf("image %v, errors %+v; want an image and no errors", snap.Source.Image, snap.Errors)
	}
}

// TestLiveRootMissingProcFile: where /proc is mounted (it has entries), a
// running-state file missing from it is a blind spot, still reported; the
// root is no image.
func TestLiveRootMissingProcFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "gpu-node")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "testdata", "hosts", "gpu-node"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "proc", "modules")); err != nil {
		t.Fatal(err)
	}
	target, err := Local(root, LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	if target.Origin.Image {
		t.Fatal("a root with /proc mounted is an image")
	}
	snap, err := Collect(context.Background(), target, fixtureOptions(root))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Source.Image {
		t.Error("snapshot of a live root says image")
	}
	want := snapshot.CollectionError{Collector: "modules", Path: "/proc/modules", Reason: errRunningStateUnknown.Error()}
	if !slices.Contains(snap.Errors, want) {
		t.Errorf("errors %+v, want %+v", snap.Errors, want)
	}
	if !snap.Boot.Running.Present || snap.Memory.MemTotalKB == 0 {
		t.Error("the running state the root has was not read")
	}
}

// TestImageOnlyForLocalRoots: a target that does not say image (SSH, any
// transport reading a live host) is read as live even without /proc: the
// missing running state is an error there, never taken for an image.
func TestImageOnlyForLocalRoots(t *testing.T) {
	fsys := fstest.MapFS{"etc/os-release": {Data: []byte("ID=debian\n")}, "proc": {Mode: fs.ModeDir | 0o555}}
	target := Target{Origin: snapshot.Origin{Kind: "ssh", Address: "10.0.0.1", Root: "/"}, Files: FS(fsys)}
	snap, err := Collect(context.Background(), target, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Source.Image {
		t.Error("an SSH target became an image")
	}
	if !slices.ContainsFunc(snap.Errors, func(e snapshot.CollectionError) bool { return e.Path == "/proc/modules" }) {
		t.Errorf("no error for the missing /proc/modules of a live host: %+v", snap.Errors)
	}
}

// TestRealDebianImageInstalledKernels: an image runs no kernel, so the
// installed ones stand in. Each is laid out as Debian's linux-image-<release>
// package installs it (/boot/vmlinuz-<release>, config-, System.map-, and
// /lib/modules/<release>/ with kernel/, modules.order, modules.builtin);
// the package itself (tens of MiB) is not fetched. 6.1.0-9 is older than
// 6.1.0-18 by version order (sort -V, which grub-mkconfig's 10_linux sorts
// with), though newer as a string; a backports 6.5 kernel was removed and
// its DKMS modules left, with no kernel image to boot. The image boots
// 6.1.0-18, whose memlock default is 8 MiB (since Linux 5.16, MLOCK_LIMIT
// in include/uapi/linux/resource.h): an unset limit meets a 1 MiB minimum,
// which the fallback to the old kernels' 64 KiB reported as too low.
func TestRealDebianImageInstalledKernels(t *testing.T) {
	root, _ := debroot.DebianImage(t, "gpu-image")
	files := map[string]string{"lib/modules/6.5.0-0.deb12.4-amd64/updates/dkms/nvidia-peermem.ko": "\x7fELF"}
	for _, r := range []string{"6.1.0-9-amd64", "6.1.0-18-amd64"} {
		for name, text := range map[string]string{
			"boot/vmlinuz-" + r:                             "MZ",
			"boot/config-" + r:                              "CONFIG_64BIT=y\n",
			"boot/System.map-" + r:                          "ffffffff81000000 T _text\n",
			"lib/modules/" + r + "/modules.order":           "kernel/fs/ext4/ext4.ko\n",
			"lib/modules/" + r + "/modules.builtin":         "kernel/fs/proc/proc.ko\n",
			"lib/modules/" + r + "/kernel/fs/ext4/ext4.ko":  "\x7fELF",
			"lib/modules/" + r + "/modules.builtin.modinfo": "",
		} {
			files[name] = text
		}
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, root, name, text)
	}
	snap := realpkgCollect(t, root)
	if !snap.Source.Image {
		t.Fatal("not collected as an image")
	}
	realpkgNoErrors(t, snap)
	if want := []string{"6.1.0-9-amd64", "6.1.0-18-amd64", "6.5.0-0.deb12.4-amd64"}; !slices.Equal(snap.Kernel.Installed, want) {
		t.Errorf("installed %q, want %q", snap.Kernel.Installed, want)
	}
	if snap.Kernel.BootRelease != "6.1.0-18-amd64" || snap.Kernel.Release != "" {
		t.Errorf("boot release %q (running %q), want 6.1.0-18-amd64 and no running kernel", snap.Kernel.BootRelease, snap.Kernel.Release)
	}
	if got, want := snap.Sources["kernel.boot_release"].String(), "/boot/vmlinuz-6.1.0-18-amd64, /lib/modules/6.1.0-18-amd64"; got != want {
		t.Errorf("boot release from %q, want %q", got, want)
	}
	if got := snap.Sources["kernel.installed"].String(); !strings.Contains(got, "/lib/modules/6.5.0-0.deb12.4-amd64") || !strings.HasPrefix(got, "/boot/vmlinuz-6.1.0-9-amd64") {
		t.Errorf("installed from %q", got)
	}

	if fs := evalRules(t, snap, map[string]any{"memlock_min_kb": 1024}, "memlock-too-low"); len(fs) != 0 {
		t.Errorf("memlock-too-low for an unset limit under Linux 6.1's 8 MiB default, minimum 1 MiB: %+v", fs)
	}
	fs := evalRules(t, snap, map[string]any{"memlock_min_kb": 16384}, "memlock-too-low")
	if len(fs) != 2 {
		t.Fatalf("memlock-too-low, minimum 16 MiB: %d findings, want soft and hard", len(fs))
	}
	for _, f := range fs {
		if !strings.Contains(f.Message, "kernel default 8192 KiB") {
			t.Errorf("message %q, want Linux 6.1's default", f.Message)
		}
	}
}
