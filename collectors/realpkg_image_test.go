package collectors

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// debianImagePackages make a Debian 12 root as an image builder leaves it
// before first boot: nothing mounted, base-files' /proc, /sys and /dev
// empty mount points.
var debianImagePackages = []string{"base-files", "systemd", "procps", "kmod", "util-linux", "libpam-modules", "grub2-common"}

// DebianImageRoot unpacks debianImagePackages into a new root and does what
// their maintainer scripts and the image builder do that dpkg -x does not:
// grub-pc's postinst installs /etc/default/grub from the template
// grub2-common ships (ucf), kmod's postinst creates /etc/modules (the target
// of systemd's modules-load.d/modules.conf link), and the builder names the
// host in /etc/hostname.
func DebianImageRoot(t testing.TB, hostname string) (string, []debroot.Package) {
	t.Helper()
	root, pkgs := debroot.Root(t, debianImagePackages...)
	grub, err := os.ReadFile(filepath.Join(root, "usr/share/grub/default/grub"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/default/grub", string(grub))
	write("etc/modules", "# /etc/modules: kernel modules to load at boot time.\n")
	write("etc/hostname", hostname+"\n")
	return root, pkgs
}

func TestDebianImageProbe(t *testing.T) {
	root, pkgs := DebianImageRoot(t, "gpu-image")
	for _, p := range pkgs {
		t.Logf("%s %s", p.Name, p.Version)
	}
	target, err := Local(root, LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := Collect(context.Background(), target, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	_ = errors.Is
	_ = fs.ErrNotExist
	_ = slices.Contains[[]string]
	_ = strings.Contains
	_ = snapshot.IsRunningState
	if err := snapshot.Encode(os.Stdout, snap); err != nil {
		t.Fatal(err)
	}
}
