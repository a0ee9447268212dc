package collectors

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

const serviceRule = "service-memlock-too-low"

// systemctlEdit writes what "systemctl edit UNIT" saves (systemd 252,
// Debian 12): /etc/systemd/system/UNIT.d/override.conf holding the text
// typed between its markers.
func systemctlEdit(t *testing.T, root, unit, text string) string {
	t.Helper()
	file := "etc/systemd/system/" + unit + ".d/override.conf"
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(file)), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, file, text)
	return "/" + file
}

// TestRealSlurmdPackage: slurm-wlm's slurmd unit sets LimitMEMLOCK=infinity
// (the Slurm FAQ's advice: jobs inherit slurmd's limit), so as installed
// the rule is quiet; a drop-in lowering it makes it fire, citing the
// drop-in's line.
func TestRealSlurmdPackage(t *testing.T) {
	root, pkgs := debroot.Root(t, "slurmd")
	t.Logf("slurmd %s", pkgs[0].Version)
	const unitFile = "/lib/systemd/system/slurmd.service"
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	want := map[string]snapshot.ServiceUnit{"slurmd.service": {
		File: unitFile, DropIns: []string{},
		Memlock: &snapshot.MemlockLimit{Soft: "unlimited", Hard: "unlimited"},
	}}
	if diff := cmp.Diff(want, snap.Services.Units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	limitAt := unitFile + ":" + strconv.Itoa(lineOf(t, root, unitFile[1:], `^LimitMEMLOCK=infinity$`))
	if at := snap.Sources["services.units.slurmd.service.memlock"]; at.String() != limitAt {
		t.Errorf("memlock from %s, want %s", at, limitAt)
	}
	if fs := realpkgFindings(t, snap, serviceRule, nil); len(fs) != 0 {
		t.Errorf("as installed: %+v", fs)
	}

	dropIn := systemctlEdit(t, root, "slurmd.service", "[Service]\nLimitMEMLOCK=64M\n")
	snap = realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	u := snap.Services.Units["slurmd.service"]
	if !cmp.Equal(u.DropIns, []string{dropIn}) || u.Memlock == nil || *u.Memlock != (snapshot.MemlockLimit{Soft: "65536", Hard: "65536"}) {
		t.Errorf("with the drop-in: %+v, want 64M (65536 KiB) from %s", u, dropIn)
	}
	fs := realpkgFindings(t, snap, serviceRule, nil)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(fs), fs)
	}
	if want := "slurmd.service starts jobs, and it is configured with memlock 65536 KiB, below the fleet's minimum unlimited"; fs[0].Message != want {
		t.Errorf("message %q, want %q", fs[0].Message, want)
	}
	if got, want := evidenceFrom(fs[0], "services.units.slurmd.service.memlock"), dropIn+":2"; got != want {
		t.Errorf("memlock cited from %q, want %q", got, want)
	}
	if fs[0].Fix["unit"] != "slurmd.service" {
		t.Errorf("fix %+v, want a drop-in for slurmd.service", fs[0].Fix)
	}
}

// TestRealContainerdPackage: containerd's unit sets LimitNPROC, LimitCORE
// and LimitNOFILE but no LimitMEMLOCK, so containerd and every container
// it starts get systemd's default (8M since systemd 251): below a fleet
// minimum of unlimited, and not below one of 8192 KiB. A drop-in with
// LimitMEMLOCK=infinity (the rule's fix) quiets it.
func TestRealContainerdPackage(t *testing.T) {
	root, pkgs := debroot.Root(t, "containerd")
	t.Logf("containerd %s", pkgs[0].Version)
	const unitFile = "/lib/systemd/system/containerd.service"
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	want := map[string]snapshot.ServiceUnit{"containerd.service": {File: unitFile, DropIns: []string{}, MemlockDefault: true}}
	if diff := cmp.Diff(want, snap.Services.Units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	if at := snap.Sources["services.units.containerd.service.file"]; at.File != unitFile {
		t.Errorf("unit file from %+v", at)
	}
	fs := realpkgFindings(t, snap, serviceRule, nil)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "it sets no LimitMEMLOCK=") {
		t.Fatalf("as installed: %+v, want one finding for the default limit", fs)
	}
	if got := evidenceFrom(fs[0], "services.units.containerd.service.memlock_default"); !strings.HasPrefix(got, "default: ") {
		t.Errorf("memlock_default cited from %q, want systemd's default", got)
	}
	if fs := realpkgFindings(t, snap, serviceRule, map[string]any{"memlock_min_kb": 8192}); len(fs) != 0 {
		t.Errorf("minimum 8192 KiB, systemd's default at most that: %+v", fs)
	}

	dropIn := systemctlEdit(t, root, "containerd.service", "[Service]\nLimitMEMLOCK=infinity\n")
	snap = realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	u := snap.Services.Units["containerd.service"]
	if u.MemlockDefault || u.Memlock == nil || u.Memlock.Soft != "unlimited" || !cmp.Equal(u.DropIns, []string{dropIn}) {
		t.Errorf("with the drop-in: %+v", u)
	}
	if fs := realpkgFindings(t, snap, serviceRule, nil); len(fs) != 0 {
		t.Errorf("LimitMEMLOCK=infinity in a drop-in: %+v", fs)
	}
}

// TestRealRDMACorePackage: rdma-core ships modprobe.d files (mlx4.conf all
// comments; truescale.conf one install line, which kmod runs instead of
// loading ib_qib, modprobe.d(5)), udev rules and /etc/rdma/modules lists.
// The rdma collector reads /sys/class/infiniband and /dev/infiniband only,
// so with no device the RDMA facts are empty. /etc/rdma/modules/*.conf
// are loaded by rdma-load-modules@.service (systemd-modules-load FILE)
// when udev finds hardware of their class (udev.md): each uncommented line
// is a module configured to load, cited at its line.
func TestRealRDMACorePackage(t *testing.T) {
	root, pkgs := debroot.Root(t, "rdma-core")
	t.Logf("rdma-core %s", pkgs[0].Version)
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	const truescale = "etc/modprobe.d/truescale.conf"
	line := lineOf(t, root, truescale, `^install ib_qib `)
	data, err := os.ReadFile(filepath.Join(root, truescale))
	if err != nil {
		t.Fatal(err)
	}
	command := strings.TrimSpace(strings.TrimPrefix(confFileLines(data)[line-1], "install ib_qib"))
	if diff := cmp.Diff(map[string]string{"ib_qib": command}, snap.Modules.Install); diff != "" {
		t.Errorf("install commands (-want +got):\n%s", diff)
	}
	if at := snap.Sources["modules.install.ib_qib"]; at.File != "/"+truescale || at.Line != line {
		t.Errorf("ib_qib install from %+v, want /%s:%d", at, truescale, line)
	}
	if len(snap.Modules.Blacklisted) != 0 {
		t.Errorf("blacklisted %v: rdma-core blacklists nothing", snap.Modules.Blacklisted)
	}
	if len(snap.RDMA.Devices) != 0 || len(snap.RDMA.DevFiles) != 0 {
		t.Errorf("no device, yet %+v", snap.RDMA)
	}

	uncommented := regexp.MustCompile(`(?m)^[a-z0-9_-]+$`)
	files, err := filepath.Glob(filepath.Join(root, "etc/rdma/modules/*.conf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no /etc/rdma/modules files (%v)", err)
	}
	// Glob sorts by name, as the collector reads the lists.
	configured, firstAt := map[string]bool{}, map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mods, errs := parseModulesLoadD(data)
		for _, err := range errs {
			t.Errorf("%s: %v", f, err)
		}
		var got []string
		for _, m := range mods {
			got = append(got, m.Name)
		}
		var want []string
		for _, m := range uncommented.FindAllString(string(data), -1) {
			want = append(want, strings.ReplaceAll(m, "-", "_"))
		}
		if !cmp.Equal(got, want) {
			t.Errorf("%s: modules %v, want %v", filepath.Base(f), got, want)
		}
		for i, l := range confFileLines(data) {
			if !uncommented.MatchString(l) {
				continue
			}
			m := strings.ReplaceAll(l, "-", "_")
			configured[m] = true
			if _, ok := firstAt[m]; !ok {
				firstAt[m] = fmt.Sprintf("/etc/rdma/modules/%s:%d", filepath.Base(f), i+1)
			}
		}
	}
	if diff := cmp.Diff(configured, snap.Modules.Configured); diff != "" {
		t.Errorf("configured (-want +got):\n%s", diff)
	}
	for m, at := range firstAt {
		if got := snap.Sources["modules.configured."+m].String(); got != at {
			t.Errorf("%s configured from %q, want %q", m, got, at)
		}
	}
}

// TestRealOpenSSHServerPackage: no collector reads openssh-server's files
// (sshd_config, ssh.service, its ufw application profile): the package adds
// no collection error and no fact; /etc/ufw/applications.d alone is not
// ufw.
func TestRealOpenSSHServerPackage(t *testing.T) {
	root, pkgs := debroot.Root(t, "openssh-server")
	t.Logf("openssh-server %s", pkgs[0].Version)
	// The postinst copies sshd_config from /usr/share/openssh (ucf).
	data, err := os.ReadFile(filepath.Join(root, "usr/share/openssh/sshd_config"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "etc/ssh/sshd_config", string(data))
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	empty := realpkgCollect(t, t.TempDir())
	if snap.Firewall != empty.Firewall || len(snap.Services.Units) != 0 {
		t.Errorf("firewall %+v, services %+v: want none", snap.Firewall, snap.Services.Units)
	}
	for fact, at := range snap.Sources {
		if strings.Contains(at.File, "ssh") {
			t.Errorf("fact %s from %s: no collector reads openssh-server's files", fact, at)
		}
	}
}

// TestRealUnitFilesParse: every unit file these packages ship reads as
// systemd reads it, with no bad line in any section.
func TestRealUnitFilesParse(t *testing.T) {
	sectionRE := regexp.MustCompile(`(?m)^\[([^\]]+)\]$`)
	for _, pkg := range []string{"slurmd", "containerd", "nftables", "firewalld", "ufw", "rdma-core", "openssh-server"} {
		files := debroot.Files(t, pkg, "lib/systemd/system/*")
		if files == nil {
			t.Skipf("%s not available here", pkg)
		}
		for name, data := range files {
			sections := sectionRE.FindAllSubmatch(data, -1)
			if len(sections) == 0 {
				t.Errorf("%s: no section", name)
			}
			for _, s := range sections {
				if _, errs, _ := parseUnitSetting(data, string(s[1]), "LimitMEMLOCK"); len(errs) != 0 {
					t.Errorf("%s [%s]: %v", name, s[1], errs)
				}
			}
		}
	}
}

// TestRealPackagesTogether: the packages unpacked into one root, as on a
// node that has them all, read without a collection error, each into its
// own facts.
func TestRealPackagesTogether(t *testing.T) {
	root, _ := ufwInstalledRoot(t)
	pkgs, err := debroot.Unpack(root, "nftables", "firewalld", "slurmd", "containerd", "rdma-core", "openssh-server")
	if err != nil {
		t.Skipf("real packages: %v", err)
	}
	for _, p := range pkgs {
		t.Logf("%s %s", p.Name, p.Version)
	}
	snap := realpkgCollect(t, root)
	realpkgNoErrors(t, snap)
	fw := snap.Firewall
	if fw.UFW == nil || fw.Firewalld == nil || fw.Nftables == nil {
		t.Errorf("firewalls %+v, want ufw, firewalld and nftables", fw)
	}
	for _, unit := range []string{"slurmd.service", "containerd.service"} {
		if _, ok := snap.Services.Units[unit]; !ok {
			t.Errorf("no %s in %+v", unit, snap.Services.Units)
		}
	}
	if _, ok := snap.Modules.Install["ib_qib"]; !ok {
		t.Errorf("no ib_qib install line in %+v", snap.Modules.Install)
	}
}

// TestRealRDMACoreModuleLists: a module an admin adds to rdma-core's
// /etc/rdma/modules/rdma.conf (loaded on any RDMA device, rdma-hw.target)
// counts as configured to load, cited at its line; a line naming no
// module is skipped as systemd-modules-load skips it. A list by another
// name, or the lists with rdma-load-modules@.service masked, load nothing.
func TestRealRDMACoreModuleLists(t *testing.T) {
	root, _ := debroot.Root(t, "rdma-core")
	const list = "etc/rdma/modules/rdma.conf"
	data, err := os.ReadFile(filepath.Join(root, list))
	if err != nil {
		t.Fatal(err)
	}
	lines := len(confFileLines(data))
	writeFile(t, root, list, string(data)+"nvidia-peermem\nnv_peer_mem force=1\n")
	writeFile(t, root, "etc/rdma/modules/local.conf", "nv_peer_mem\n")

	snap := realpkgCollect(t, root)
	if !snap.Modules.Configured["nvidia_peermem"] {
		t.Errorf("nvidia_peermem in %s not configured: %v", list, snap.Modules.Configured)
	}
	if got, want := snap.Sources["modules.configured.nvidia_peermem"].String(), fmt.Sprintf("/%s:%d", list, lines+1); got != want {
		t.Errorf("nvidia_peermem configured from %q, want %q", got, want)
	}
	if snap.Modules.Configured["nv_peer_mem"] {
		t.Error("nv_peer_mem configured: its line names no module, and local.conf is no list rdma-core loads")
	}
	var skipped []string
	for _, e := range snap.Errors {
		if e.Collector == "modules" && e.Path != procModules {
			skipped = append(skipped, fmt.Sprintf("%s skipped=%v", e.Path, e.Skipped))
		}
	}
	if want := []string{"/" + list + " skipped=true"}; !cmp.Equal(skipped, want) {
		t.Errorf("modules errors %q, want %q", skipped, want)
	}

	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/rdma-load-modules@.service")); err != nil {
		t.Fatal(err)
	}
	snap = realpkgCollect(t, root)
	if len(snap.Modules.Configured) != 0 {
		t.Errorf("loader masked, yet configured %v", snap.Modules.Configured)
	}
}
