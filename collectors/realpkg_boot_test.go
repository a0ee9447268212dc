package collectors

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// A Debian 12 host that boots with systemd-boot, built from Debian's own
// packages: systemd (kernel-install and its 90-loaderentry.install),
// systemd-boot and systemd-boot-efi (bootctl and the EFI binary), and
// grub2-common, whose /usr/share/grub/default/grub the installer's grub-pc
// postinst copied to /etc/default/grub (ucf) before the host moved to
// systemd-boot: the leftover.

const (
	sdbMID    = "0a1b2c3d4e5f40718293a4b5c6d7e8f9"
	sdbKernel = "6.1.0-18-amd64"
	sdbRoot   = "root=UUID=5c2e8a1f-7b3d-4c9e-a6f5-0d1e2f3a4b5c ro quiet"
)

// bootRules are the rules this file checks.
var bootRules = []string{"boot-config-pending", "boot-entry-divergent", "boot-loader-conflict", "hugetlb-cma-on-gpu"}

type sdBootHost struct {
	root    string
	pkgs    []debroot.Package
	version string // of systemd-boot, as its EFI binary names itself
}

// sdBootDebianRoot is the host as installed: bootctl install's files on the
// ESP at /efi, /etc/kernel/cmdline, one kernel's entry written by the real
// 90-loaderentry.install, booted by systemd-boot.
func sdBootDebianRoot(t *testing.T) sdBootHost {
	t.Helper()
	root, pkgs := debroot.Root(t, "systemd", "systemd-boot", "systemd-boot-efi", "grub2-common")
	h := sdBootHost{root: root, pkgs: pkgs}
	efi, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/boot/efi/systemd-bootx64.efi"))
	if err != nil {
		t.Fatal(err)
	}
	// The binary's .osrel section names it; LoaderInfo is
	// "systemd-boot <version>" (boot.c: L"systemd-boot " GIT_VERSION).
	m := regexp.MustCompile(`NAME="systemd-boot ([^"]+)"`).FindSubmatch(efi)
	if m == nil {
		t.Fatal("systemd-bootx64.efi: no NAME=\"systemd-boot ...\" in .osrel")
	}
	h.version = string(m[1])

	writeFile(t, root, "etc/machine-id", sdbMID+"\n")
	// bootctl install (systemd 252, install_binaries, install_loader_config
	// with --make-machine-id-directory=auto from systemd-boot's postinst):
	// the binary as EFI/systemd/systemd-bootx64.efi and the fallback
	// EFI/BOOT/BOOTX64.EFI, loader.conf, loader/entries and the entry
	// directory named after the machine id.
	for _, d := range []string{"efi/EFI/systemd", "efi/EFI/BOOT", "efi/loader/entries", "efi/" + sdbMID, "etc/default", "etc/kernel", "proc", "sys/firmware/efi/efivars"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, root, "efi/EFI/systemd/systemd-bootx64.efi", string(efi))
	writeFile(t, root, "efi/EFI/BOOT/BOOTX64.EFI", string(efi))
	writeFile(t, root, "efi/loader/loader.conf", "#timeout 3\n#console-mode keep\ndefault "+sdbMID+"-*\n")
	// The installer's GRUB defaults, as grub-pc's postinst copies them
	// from /usr/share/grub/default/grub.
	grubDefaults, err := os.ReadFile(filepath.Join(root, "usr/share/grub/default/grub"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "etc/default/grub", string(grubDefaults))
	// kernel-install(8): /etc/kernel/cmdline is the command line of new entries.
	writeFile(t, root, "etc/kernel/cmdline", sdbRoot+"\n")
	h.kernelInstall(t, sdbKernel)

	// What systemd-boot 252 passes: "initrd=<path with \>" for each initrd
	// line, then the entry's options (boot.c, config_entry_add_type1:
	// L"%s initrd=%s" and the entry options after them).
	opts := sdbRoot + " systemd.machine_id=" + sdbMID
	writeFile(t, root, "proc/cmdline", `initrd=\`+sdbMID+`\`+sdbKernel+`\initrd.img-`+sdbKernel+" "+opts+"\n")
	writeFile(t, root, "sys/firmware/efi/efivars/LoaderInfo-"+loaderVendor, string(efiVar("systemd-boot "+h.version)))
	return h
}

// kernelInstall runs the package's own 90-loaderentry.install for version.
func (h sdBootHost) kernelInstall(t *testing.T, version string) {
	t.Helper()
	runLoaderEntryScript(t, filepath.Join(h.root, "usr/lib/kernel/install.d/90-loaderentry.install"),
		filepath.Join(h.root, "etc/kernel"), filepath.Join(h.root, "efi"), version)
}

// runLoaderEntryScript runs 90-loaderentry.install as kernel-install add
// does on Debian (layout bls, entry token = machine id, $BOOT = the ESP at
// boot), with the kernel-install configuration of confRoot.
func runLoaderEntryScript(tb testing.TB, script, confRoot, boot, version string) {
	tb.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		tb.Skip("no sh to run 90-loaderentry.install")
	}
	tmp := tb.TempDir()
	for _, f := range []string{"vmlinuz-" + version, "initrd.img-" + version} {
		if err := os.WriteFile(filepath.Join(tmp, f), []byte("not a real "+f), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	staging := filepath.Join(tmp, "staging")
	entryDir := filepath.Join(boot, sdbMID, version)
	for _, d := range []string{staging, entryDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	cmd := exec.Command("sh", script, "add", version, entryDir, filepath.Join(tmp, "vmlinuz-"+version), filepath.Join(tmp, "initrd.img-"+version))
	cmd.Env = append(os.Environ(),
		"KERNEL_INSTALL_LAYOUT=bls",
		"KERNEL_INSTALL_MACHINE_ID="+sdbMID,
		"KERNEL_INSTALL_ENTRY_TOKEN="+sdbMID,
		"KERNEL_INSTALL_BOOT_ROOT="+boot,
		"KERNEL_INSTALL_CONF_ROOT="+confRoot,
		"KERNEL_INSTALL_STAGING_AREA="+staging,
		"KERNEL_INSTALL_VERBOSE=0",
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("90-loaderentry.install add %s: %v\n%s", version, err, out)
	}
}

// realLoaderEntry is the entry the systemd package's 90-loaderentry.install
// writes for cmdline: a fuzz seed. Nil when the package is not available.
func realLoaderEntry(tb testing.TB, cmdline string) []byte {
	tb.Helper()
	files := debroot.Files(tb, "systemd", "usr/lib/kernel/install.d/90-loaderentry.install")
	script, ok := files["usr/lib/kernel/install.d/90-loaderentry.install"]
	if !ok {
		return nil
	}
	dir := tb.TempDir()
	for _, d := range []string{"conf", "boot"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "90-loaderentry.install"), script, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conf/cmdline"), []byte(cmdline), 0o644); err != nil {
		tb.Fatal(err)
	}
	runLoaderEntryScript(tb, filepath.Join(dir, "90-loaderentry.install"), filepath.Join(dir, "conf"), filepath.Join(dir, "boot"), sdbKernel)
	data, err := os.ReadFile(filepath.Join(dir, "boot/loader/entries", sdbMID+"-"+sdbKernel+".conf"))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// entryPath is the entry 90-loaderentry.install writes for version (line
// 102: $BOOT_ROOT/loader/entries/$ENTRY_TOKEN-$KERNEL_VERSION.conf).
func entryPath(version string) string {
	return "/efi/loader/entries/" + sdbMID + "-" + version + ".conf"
}

// optionsLine is the line of the entry's options, which the script writes
// after title, version, machine-id and (when os-release has an ID) sort-key.
func (h sdBootHost) optionsLine(t *testing.T, version string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.root, entryPath(version)))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "options ") {
			return i + 1
		}
	}
	t.Fatalf("%s has no options line:\n%s", entryPath(version), data)
	return 0
}

// collectBootRules collects root and evaluates the boot rules on it.
func collectBootRules(t *testing.T, root string) (*snapshot.Snapshot, map[string][]policies.Finding) {
	t.Helper()
	ctx := context.Background()
	target := Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: Dir(root)}
	snap := collectGuarded(t, ctx, target, fixtureOptions("sdboot"))
	out := map[string][]policies.Finding{}
	for _, f := range evalRules(t, snap, nil, bootRules...) {
		out[f.Rule] = append(out[f.Rule], f)
	}
	return snap, out
}

// TestRealSdBootDebianHost: systemd-boot with the installer's leftover
// /etc/default/grub reads as systemd-boot, from the evidence its boot left,
// and nothing fires on the host as installed: the entry kernel-install
// wrote matches /etc/kernel/cmdline but for the systemd.machine_id= it
// appends (90-loaderentry.install lines 84-90), and the running kernel
// booted it.
func TestRealSdBootDebianHost(t *testing.T) {
	h := sdBootDebianRoot(t)
	for _, p := range h.pkgs {
		t.Logf("%s %s (%s)", p.Name, p.Version, filepath.Base(p.Deb))
	}
	snap, fired := collectBootRules(t, h.root)
	if errs := bootErrors(snap); len(errs) > 0 {
		t.Errorf("boot collection errors: %q", errs)
	}
	cfg := snap.Boot.Configured
	if cfg.Loader != "systemd-boot" {
		t.Fatalf("loader %q, want systemd-boot (evidence %q)", cfg.Loader, cfg.LoaderEvidence)
	}
	wantEvidence := []string{
		"LoaderInfo EFI variable: systemd-boot " + h.version,
		`initrd=\... in /proc/cmdline without BOOT_IMAGE=`,
		"systemd-boot loader.conf: /efi/loader/loader.conf",
		"systemd-boot EFI binary: /efi/EFI/systemd",
		"systemd-boot entries: /efi/loader/entries",
	}
	if !slices.Equal(cfg.LoaderEvidence, wantEvidence) {
		t.Errorf("loader evidence %q, want %q", cfg.LoaderEvidence, wantEvidence)
	}
	if len(cfg.LoaderConflict) > 0 {
		t.Errorf("a leftover /etc/default/grub is not a second loader: conflict %q", cfg.LoaderConflict)
	}
	if got := snap.Sources["boot.configured.loader"].String(); got != "/sys/firmware/efi/efivars/LoaderInfo-"+loaderVendor {
		t.Errorf("loader cited at %q, want the LoaderInfo variable", got)
	}
	// The GRUB defaults are still read (a reader sees them), not used.
	if cfg.Grub == nil || cfg.Grub.CmdlineLinuxDefault != "quiet" {
		t.Errorf("GRUB defaults %+v, want Debian's GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"", cfg.Grub)
	}
	if cfg.DefaultEntry == nil || cfg.Entries[*cfg.DefaultEntry].File != entryPath(sdbKernel) || cfg.DefaultBy != "loader.conf default" {
		t.Fatalf("default entry %v of %+v by %q, want %s by loader.conf's default", cfg.DefaultEntry, cfg.Entries, cfg.DefaultBy, entryPath(sdbKernel))
	}
	if got, want := cfg.Cmdline.Cmdline, sdbRoot+" systemd.machine_id="+sdbMID; got != want {
		t.Errorf("configured command line %q, want the entry's %q", got, want)
	}
	for rule, fs := range fired {
		for _, f := range fs {
			t.Errorf("%s fired on the host as installed: %s", rule, f.Message)
		}
	}
}

// TestRealSdBootHugetlbCMAPlanted: hugetlb_cma=6G added to
// /etc/kernel/cmdline is seen before any kernel install (the default entry
// diverges from it) and, once a kernel upgrade's kernel-install wrote it
// into the new default entry, as the command line the next boot changes.
func TestRealSdBootHugetlbCMAPlanted(t *testing.T) {
	h := sdBootDebianRoot(t)
	appendFile(t, h.root, "etc/kernel/cmdline", "hugetlb_cma=6G\n")

	snap, fired := collectBootRules(t, h.root)
	if errs := bootErrors(snap); len(errs) > 0 {
		t.Errorf("boot collection errors: %q", errs)
	}
	if len(fired["boot-config-pending"]) > 0 {
		t.Errorf("boot-config-pending fired before the entry changed: %s", fired["boot-config-pending"][0].Message)
	}
	div := fired["boot-entry-divergent"]
	if len(div) != 1 {
		t.Fatalf("boot-entry-divergent fired %d times, want once", len(div))
	}
	if !strings.HasSuffix(div[0].Message, ": hugetlb_cma=6G only in /etc/kernel/cmdline") {
		t.Errorf("message %q, want only hugetlb_cma named (systemd.machine_id is kernel-install's own)", div[0].Message)
	}
	if got := evidenceFrom(div[0], "boot.configured.kernel_cmdline.params.hugetlb_cma"); got != "/etc/kernel/cmdline:2" {
		t.Errorf("hugetlb_cma cited at %q, want /etc/kernel/cmdline:2", got)
	}
	cma := fired["hugetlb-cma-on-gpu"]
	if len(cma) != 1 || !strings.HasPrefix(cma[0].Message, "hugetlb_cma=6G in /etc/kernel/cmdline, which the next kernel install writes") {
		t.Fatalf("hugetlb-cma-on-gpu %+v, want it planted in /etc/kernel/cmdline", cma)
	}
	if got := evidenceFrom(cma[0], "boot.configured.kernel_cmdline.params.hugetlb_cma"); got != "/etc/kernel/cmdline:2" {
		t.Errorf("hugetlb-cma-on-gpu cites %q, want /etc/kernel/cmdline:2", got)
	}

	// A kernel upgrade: Debian's /etc/kernel/postinst.d/zz-systemd-boot
	// runs kernel-install add, and the newer entry is the default.
	const next = "6.1.0-20-amd64"
	h.kernelInstall(t, next)
	snap, fired = collectBootRules(t, h.root)
	cfg := snap.Boot.Configured
	if cfg.DefaultEntry == nil || cfg.Entries[*cfg.DefaultEntry].File != entryPath(next) {
		t.Fatalf("default entry %v of %+v, want %s", cfg.DefaultEntry, cfg.Entries, entryPath(next))
	}
	if cfg.Params["hugetlb_cma"] != "6G" {
		t.Errorf("configured params %v, want hugetlb_cma=6G from the new entry", cfg.Params)
	}
	pend := fired["boot-config-pending"]
	if len(pend) != 1 {
		t.Fatalf("boot-config-pending fired %d times, want once", len(pend))
	}
	if !strings.HasSuffix(pend[0].Message, "(systemd-boot loader): +hugetlb_cma") {
		t.Errorf("message %q, want only +hugetlb_cma from the systemd-boot entry", pend[0].Message)
	}
	want := entryPath(next) + ":" + strconv.Itoa(h.optionsLine(t, next))
	if got := evidenceFrom(pend[0], "boot.configured.params.hugetlb_cma"); got != want {
		t.Errorf("hugetlb_cma cited at %q, want %q", got, want)
	}
	if len(fired["boot-entry-divergent"]) > 0 {
		t.Errorf("boot-entry-divergent fired on an entry kernel-install wrote: %s", fired["boot-entry-divergent"][0].Message)
	}
	cma = fired["hugetlb-cma-on-gpu"]
	if len(cma) != 1 || !strings.HasPrefix(cma[0].Message, "hugetlb_cma=6G on the configured kernel command line") {
		t.Fatalf("hugetlb-cma-on-gpu %+v, want it on the configured command line", cma)
	}
	if got := evidenceFrom(cma[0], "boot.configured.params.hugetlb_cma"); got != want {
		t.Errorf("hugetlb-cma-on-gpu cites %q, want %q", got, want)
	}
}

// TestRealSdBootEntriesOnAGrubBootedHost: the same host booted by GRUB
// (BOOT_IMAGE= on the command line, no LoaderInfo: the firmware started
// another boot entry): the configuration is GRUB's, and systemd-boot's
// entries, which /etc/kernel/cmdline feeds, are reported as a second
// loader.
func TestRealSdBootEntriesOnAGrubBootedHost(t *testing.T) {
	h := sdBootDebianRoot(t)
	remove(t, h.root, "sys/firmware/efi/efivars/LoaderInfo-"+loaderVendor)
	writeFile(t, h.root, "proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-"+sdbKernel+" "+sdbRoot+"\n")
	snap, fired := collectBootRules(t, h.root)
	cfg := snap.Boot.Configured
	if cfg.Loader != "grub" || !slices.Equal(cfg.LoaderEvidence, []string{"BOOT_IMAGE= in /proc/cmdline", "GRUB defaults: /etc/default/grub"}) {
		t.Errorf("loader %q from %q, want grub from BOOT_IMAGE=", cfg.Loader, cfg.LoaderEvidence)
	}
	c := fired["boot-loader-conflict"]
	if len(c) != 1 {
		t.Fatalf("boot-loader-conflict fired %d times, want once", len(c))
	}
	if !strings.HasSuffix(c[0].Message, "evidence of another boot loader: systemd-boot entries: /efi/loader/entries") {
		t.Errorf("message %q", c[0].Message)
	}
	if got := evidenceFrom(c[0], "boot.configured.loader_conflict"); got != "/efi/loader/entries" {
		t.Errorf("conflict cited at %q, want /efi/loader/entries", got)
	}
	if len(fired["boot-config-pending"]) > 0 {
		t.Errorf("boot-config-pending: %s", fired["boot-config-pending"][0].Message)
	}
}

// TestRealGrubDebianDefaults: Debian's GRUB defaults as grub-pc's postinst
// installs them (/usr/share/grub/default/grub copied by ucf) on a host GRUB
// boots: no error (GRUB_DISTRIBUTOR's backquotes are not a command-line
// variable), the command line GRUB_CMDLINE_LINUX_DEFAULT="quiet" gives, and
// nothing pending. Then a drop-in, which grub-mkconfig sources after it
// (/etc/default/grub.d/*.cfg), plants hugetlb_cma=6G for the next boot.
func TestRealGrubDebianDefaults(t *testing.T) {
	root, pkgs := debroot.Root(t, "grub2-common")
	t.Logf("grub2-common %s", pkgs[0].Version)
	data, err := os.ReadFile(filepath.Join(root, "usr/share/grub/default/grub"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"etc/default/grub.d", "proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, root, "etc/default/grub", string(data))
	// 10_linux: linux <kernel> root=<device> ro ${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}.
	writeFile(t, root, "proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-"+sdbKernel+" root=UUID=5c2e8a1f-7b3d-4c9e-a6f5-0d1e2f3a4b5c ro quiet\n")

	snap, fired := collectBootRules(t, root)
	if errs := bootErrors(snap); len(errs) > 0 {
		t.Errorf("boot collection errors: %q", errs)
	}
	cfg := snap.Boot.Configured
	if cfg.Loader != "grub" || cfg.Grub == nil || cfg.Grub.Default != "0" || len(cfg.Params) != 1 || cfg.Params["quiet"] != "" {
		t.Errorf("loader %q, params %v, GRUB defaults %+v: want grub, quiet, GRUB_DEFAULT=0", cfg.Loader, cfg.Params, cfg.Grub)
	}
	if at := snap.Sources["boot.configured.params.quiet"]; at.File != "/etc/default/grub" || at.Line == 0 {
		t.Errorf("quiet cited at %v, want the GRUB_CMDLINE_LINUX_DEFAULT line of /etc/default/grub", at)
	}
	for rule, fs := range fired {
		t.Errorf("%s fired on the defaults as installed: %s", rule, fs[0].Message)
	}

	writeFile(t, root, "etc/default/grub.d/60-hugetlb.cfg", "# GPU fleet\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX hugetlb_cma=6G\"\n")
	_, fired = collectBootRules(t, root)
	pend := fired["boot-config-pending"]
	if len(pend) != 1 || !strings.HasSuffix(pend[0].Message, "(grub loader): +hugetlb_cma") {
		t.Fatalf("boot-config-pending %+v, want +hugetlb_cma", pend)
	}
	if got := evidenceFrom(pend[0], "boot.configured.params.hugetlb_cma"); got != "/etc/default/grub.d/60-hugetlb.cfg:2" {
		t.Errorf("hugetlb_cma cited at %q, want /etc/default/grub.d/60-hugetlb.cfg:2", got)
	}

	// A syntax error in a drop-in: grub-mkconfig's sh exits there, so the
	// next boot keeps grub.cfg: the error is reported and the configured
	// command line is unknown, not a pending change.
	writeFile(t, root, "etc/default/grub.d/70-broken.cfg", "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT nosmt\n")
	snap, fired = collectBootRules(t, root)
	want := []string{"/etc/default/grub.d/70-broken.cfg: parse error: line 1: unterminated double quote; " + grubAborts}
	if errs := bootErrors(snap); !slices.Equal(errs, want) {
		t.Errorf("errors %q, want %q", errs, want)
	}
	if cfg := snap.Boot.Configured; cfg.Present || cfg.Grub.Aborted != "/etc/default/grub.d/70-broken.cfg:1" {
		t.Errorf("configured present %v, aborted %q: want absent, aborted at 70-broken.cfg:1", cfg.Present, cfg.Grub.Aborted)
	}
	if len(fired["boot-config-pending"]) > 0 {
		t.Errorf("boot-config-pending fired on an unknown next command line: %s", fired["boot-config-pending"][0].Message)
	}
}
