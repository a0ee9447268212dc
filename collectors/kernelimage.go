package collectors

import (
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const (
	modulesRoot = "/lib/modules"
	bootDir     = "/boot"
)

// collectInstalledKernels reads the kernels an offline image has installed,
// which stand in for the running kernel it does not have. A Debian
// linux-image package installs /boot/vmlinuz-<release> and
// /lib/modules/<release>/ (kernel/, modules.order, modules.builtin); Fedora's
// kernel-core ships the image as /lib/modules/<release>/vmlinuz, which
// kernel-install copies to /boot. The boot loader's default is usually the
// newest: grub-mkconfig's 10_linux sorts /boot/vmlinuz-* with version_sort
// (sort -V) and lists the newest first; blscfg and systemd-boot sort their
// entries by version too.
func collectInstalledKernels(c *collection) {
	const collector = "kernel"
	type kernel struct {
		places []snapshot.Provenance
		image  bool // a kernel image to boot, not only modules
	}
	found := map[string]*kernel{}
	add := func(release, file string, image bool) {
		k := found[release]
		if k == nil {
			k = &kernel{}
			found[release] = k
		}
		k.places = append(k.places, c.at(file, 0))
		k.image = k.image || image
	}
	for _, e := range c.readDir(collector, bootDir) {
		if release, ok := strings.CutPrefix(e.Name(), "vmlinuz-"); ok && release != "" && !e.IsDir() {
			add(release, path.Join(bootDir, e.Name()), true)
		}
	}
	for _, e := range c.readDir(collector, modulesRoot) {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := path.Join(modulesRoot, e.Name())
		add(e.Name(), dir, !c.missing(path.Join(dir, "vmlinuz")))
	}
	if len(found) == 0 {
		return
	}
	k := &c.snap.Kernel
	for release := range found {
		k.Installed = append(k.Installed, release)
	}
	slices.SortFunc(k.Installed, sdVerscmp)
	var all []snapshot.Provenance
	for _, release := range k.Installed {
		all = append(all, found[release].places...)
	}
	c.fromAll("kernel.installed", all)
	// The newest that can boot; modules alone (a kernel removed, its
	// modules left) only when no release has an image.
	for _, release := range slices.Backward(k.Installed) {
		if found[release].image {
			k.BootRelease = release
			break
		}
	}
	if k.BootRelease == "" {
		k.BootRelease = k.Installed[len(k.Installed)-1]
	}
	c.fromAll("kernel.boot_release", found[k.BootRelease].places)
}
