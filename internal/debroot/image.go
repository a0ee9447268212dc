package debroot

import (
	"os"
	"path/filepath"
	"testing"
)

// DebianImagePackages make a Debian 12 root as an image builder leaves it
// before first boot: nothing mounted, base-files' /proc, /sys and /dev
// empty mount points.
var DebianImagePackages = []string{"base-files", "systemd", "procps", "kmod", "util-linux", "libpam-modules", "grub2-common"}

// DebianImage unpacks DebianImagePackages into a new root and does what
// their maintainer scripts and the image builder do that dpkg -x does not:
// grub-pc's postinst installs /etc/default/grub from the template
// grub2-common ships (ucf), kmod's postinst creates /etc/modules (the target
// of systemd's modules-load.d/modules.conf link), and the builder names the
// host in /etc/hostname. Skipped or failed as Root is.
func DebianImage(t testing.TB, hostname string) (string, []Package) {
	t.Helper()
	root, pkgs := Root(t, DebianImagePackages...)
	grub, err := os.ReadFile(filepath.Join(root, "usr/share/grub/default/grub"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"etc/default/grub": string(grub),
		"etc/modules":      "# /etc/modules: kernel modules to load at boot time.\n",
		"etc/hostname":     hostname + "\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, pkgs
}
