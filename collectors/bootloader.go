package collectors

import (
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Which boot loader reads the configuration: an installer leaves
// /etc/default/grub behind on hosts that later boot with systemd-boot, so
// the presence of a loader's files is weaker evidence than what the loader
// that started the running kernel left:
//   - systemd-boot sets the LoaderInfo EFI variable at every boot
//     ("systemd-boot 252.39-1~deb12u2", a string of Debian's systemd-bootx64.efi);
//   - GRUB's linux command puts BOOT_IMAGE= first on the command line;
//   - systemd-boot 252 passes a type #1 entry's initrds on the command line
//     as initrd=\path\on\the\ESP (boot.c: L"%s initrd=%s"), a form GRUB
//     never writes.
// Files on disk decide only when the running kernel says nothing (an image,
// a rendered config repo, a host without efivars).

// loaderInfoVar is the EFI variable systemd-boot sets to its name and version.
const loaderInfoVar = "LoaderInfo"

// bootEvidence is one thing a boot loader left, and the file it is in.
type bootEvidence struct {
	what string
	file string
}

// loaderChoice is the decided loader and the evidence on each side.
type loaderChoice struct {
	// sdBoot: systemd-boot reads the configuration; sd are its entries
	// (nil when it has none this collector reads).
	sdBoot bool
	sd     *bootEntries
	// runningLoader started the running kernel: "systemd-boot", "grub",
	// "efi" (an EFI loader other than GRUB) or "" (no evidence); running
	// is its evidence.
	runningLoader string
	running       []bootEvidence
	// sdFiles and grubMenu are what each loader has installed: loader.conf
	// or its EFI binary, and grub.cfg or grubenv.
	sdFiles, grubMenu []bootEvidence
	// conflict is evidence for the loader not chosen.
	conflict []bootEvidence
}

// decideLoader weighs the evidence: the running kernel's loader first,
// then a loader installed with a menu of its own. Leftover GRUB defaults
// without grub.cfg never outweigh systemd-boot's entries.
func (c *collection) decideLoader(running snapshot.Cmdline) loaderChoice {
	var lc loaderChoice
	runningLoader := ""
	infoAt := efivarsDir + "/" + loaderInfoVar + "-" + loaderVendor
	info, hasInfo := c.efiString(loaderInfoVar)
	sdInfo := hasInfo && strings.HasPrefix(info, "systemd-boot")
	_, bootImage := running.Params["BOOT_IMAGE"]
	efiInitrd := !bootImage && strings.HasPrefix(running.Params["initrd"], `\`)
	switch {
	case bootImage:
		// GRUB loaded the kernel, even when systemd-boot started GRUB.
		runningLoader = "grub"
		lc.running = append(lc.running, bootEvidence{"BOOT_IMAGE= in " + procCmdline, procCmdline})
	case sdInfo:
		runningLoader = "systemd-boot"
	case efiInitrd:
		runningLoader = "efi"
	}
	if sdInfo {
		ev := bootEvidence{"LoaderInfo EFI variable: " + info, infoAt}
		if runningLoader == "grub" {
			lc.conflict = append(lc.conflict, bootEvidence{ev.what + " (it started GRUB, which loaded the kernel)", infoAt})
		} else {
			lc.running = append(lc.running, ev)
		}
	}
	if efiInitrd {
		lc.running = append(lc.running, bootEvidence{`initrd=\... in ` + procCmdline + " without BOOT_IMAGE=", procCmdline})
	}

	sdFiles, conf := c.sdBootInstalled()
	lc.sdFiles = sdFiles
	lc.grubMenu = c.grubMenuFiles()
	if len(sdFiles) > 0 {
		lc.sd = c.collectSdBoot(conf)
	}
	switch runningLoader {
	case "systemd-boot":
		lc.sdBoot = true
	case "grub":
		lc.sdBoot = false
	case "efi":
		// An EFI stub boot without LoaderInfo: systemd-boot when it is
		// installed (an older one, or efivars not readable here).
		lc.sdBoot = len(sdFiles) > 0
	default:
		lc.sdBoot = lc.sd != nil && len(lc.grubMenu) == 0
	}
	switch {
	case lc.sdBoot:
		lc.conflict = append(lc.conflict, lc.grubMenu...)
	case lc.sd != nil:
		lc.conflict = append(lc.conflict, entryDirs(lc.sd)...)
	}
	lc.runningLoader = runningLoader
	return lc
}

// entryDirs is where systemd-boot's entries were read, as evidence.
func entryDirs(be *bootEntries) []bootEvidence {
	var out []bootEvidence
	for _, e := range be.entries {
		dir := path.Dir(e.File)
		if !slices.ContainsFunc(out, func(ev bootEvidence) bool { return ev.file == dir }) {
			out = append(out, bootEvidence{"systemd-boot entries: " + dir, dir})
		}
	}
	return out
}

// sdBootInstalled is what systemd-boot's installer (bootctl install) leaves
// on a boot partition: loader/loader.conf and EFI/systemd; conf is the
// first loader.conf, which systemd-boot reads.
func (c *collection) sdBootInstalled() (ev []bootEvidence, conf string) {
	for _, r := range sdBootRoots {
		name := r + "/loader/loader.conf"
		if c.present(name) {
			ev = append(ev, bootEvidence{"systemd-boot loader.conf: " + name, name})
			if conf == "" {
				conf = name
			}
		}
		if dir := r + "/EFI/systemd"; c.present(dir) {
			if entries, err := c.src.ReadDir(rel(dir)); err == nil && len(entries) > 0 {
				ev = append(ev, bootEvidence{"systemd-boot EFI binary: " + dir, dir})
			}
		}
	}
	return ev, conf
}

// grubMenuFiles are GRUB's own files, which grub-install and grub-mkconfig
// write (the defaults in /etc/default are only grub-mkconfig's input).
func (c *collection) grubMenuFiles() []bootEvidence {
	var ev []bootEvidence
	names := slices.Clone(grubCfgFiles)
	if entries, err := c.src.ReadDir(rel(efiDir)); err == nil {
		for _, e := range entries {
			if e.IsDir() && !strings.EqualFold(e.Name(), "boot") {
				names = append(names, efiDir+"/"+e.Name()+"/grub.cfg")
			}
		}
	}
	slices.Sort(names[len(grubCfgFiles):])
	for _, name := range names {
		if c.present(name) {
			ev = append(ev, bootEvidence{"GRUB config: " + name, name})
		}
	}
	for _, name := range []string{grubenvFile, debianGrubenvFile} {
		if c.present(name) {
			ev = append(ev, bootEvidence{"GRUB environment block: " + name, name})
		}
	}
	return ev
}

// present says whether name is there, for evidence only: it is looked up,
// not read (grub.cfg is mode 0600 on RHEL), and a boot partition an
// unprivileged collection cannot enter (vfat mounted with umask=0077) is
// no evidence and no error.
func (c *collection) present(name string) bool {
	_, err := c.src.Stat(rel(name))
	return err == nil
}

// recordLoaderEvidence writes what decided the loader, and the conflicting
// evidence, into the snapshot.
func (c *collection) recordLoaderEvidence(lc loaderChoice, entries *bootEntries) {
	cfg := &c.snap.Boot.Configured
	var ev []bootEvidence
	conflict := lc.conflict
	grubLoader := cfg.Loader == "grub" || cfg.Loader == "grub-bls"
	switch {
	case lc.runningLoader == "grub" && grubLoader, lc.runningLoader != "grub" && lc.sdBoot:
		ev = slices.Clone(lc.running)
	case grubLoader || cfg.Loader == "systemd-boot":
		// The running kernel was started by another loader than the one
		// whose files decided.
		conflict = append(slices.Clone(lc.running), conflict...)
	}
	switch cfg.Loader {
	case "systemd-boot":
		ev = append(ev, lc.sdFiles...)
		ev = append(ev, entryDirs(entries)...)
	case "grub", "grub-bls":
		ev = append(ev, lc.grubMenu...)
		if cfg.Loader == "grub-bls" {
			ev = append(ev, bootEvidence{"GRUB reads BLS entries: " + blsEntriesDir, blsEntriesDir})
		}
		if cfg.Grub != nil && len(cfg.Grub.Files) > 0 {
			// The defaults decide only what grub-mkconfig writes next.
			f := cfg.Grub.Files[0]
			ev = append(ev, bootEvidence{"GRUB defaults: " + f, f})
		}
	case "kernel-cmdline", "":
		// systemd-boot without type #1 entries read here (unified kernel
		// images carry their own command line).
		if lc.sdBoot {
			ev = append(ev, lc.sdFiles...)
		}
		if p, ok := c.snap.Sources["boot.configured.kernel_cmdline.cmdline"]; ok && cfg.Loader != "" {
			ev = append(ev, bootEvidence{"kernel-install command line: " + p.File, p.File})
		}
	}
	for _, e := range ev {
		cfg.LoaderEvidence = append(cfg.LoaderEvidence, e.what)
	}
	for _, e := range conflict {
		cfg.LoaderConflict = append(cfg.LoaderConflict, e.what)
	}
	if len(ev) > 0 && cfg.Loader != "" {
		c.from("boot.configured.loader", ev[0].file, 0)
	}
	if len(conflict) > 0 {
		c.from("boot.configured.loader_conflict", conflict[0].file, 0)
	}
}
