package collectors

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// The roots below hold Debian bookworm's procps, systemd and kmod as
// unpacked: configuration, not a running host (no /proc), so they are
// collected as an image is (ConfigOnly).

// pkgFindings collects a package root and returns the findings of rules.
func pkgFindings(t *testing.T, root string, rules ...string) (*snapshot.Snapshot, []policies.Finding) {
	t.Helper()
	ctx := context.Background()
	target, err := Local(root, LocalOptions{NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	opts := fixtureOptions("pkg")
	opts.ConfigOnly = true
	snap := collectGuarded(t, ctx, target, opts)
	return snap, evalRules(t, snap, nil, rules...)
}

// noErrors fails on any error of the collectors named.
func noErrors(t *testing.T, snap *snapshot.Snapshot, collectors ...string) {
	t.Helper()
	for _, e := range snap.Errors {
		if slices.Contains(collectors, e.Collector) {
			t.Errorf("%s collection error: %s: %s", e.Collector, e.Path, e.Reason)
		}
	}
}

func wantSource(t *testing.T, snap *snapshot.Snapshot, fact, want string) {
	t.Helper()
	if got := snap.Sources[fact].String(); got != want {
		t.Errorf("%s from %q, want %q", fact, got, want)
	}
}

// TestRealProcpsSysctl: procps as installed. /etc/sysctl.conf is all
// comments; /usr/lib/sysctl.d/99-protect-links.conf sets the four
// fs.protected_* links settings (its comment: "Protects against creating
// or following links under certain conditions"). Then a sysctl.d file,
// the way procps' README.sysctl says to add settings, with a line
// systemd-sysctl skips: somaxconn-low names the file and the valid line.
func TestRealProcpsSysctl(t *testing.T) {
	root, pkgs := debroot.Root(t, "procps")
	t.Logf("procps %s", pkgs[0].Version)
	snap, _ := pkgFindings(t, root)
	noErrors(t, snap, "sysctl")
	want := map[string]string{"fs.protected_fifos": "1", "fs.protected_hardlinks": "1", "fs.protected_regular": "2", "fs.protected_symlinks": "1"}
	for key, value := range want {
		if got := snap.Sysctl.Configured[key]; got != value {
			t.Errorf("%s configured %q, want %q", key, got, value)
		}
	}
	if len(snap.Sysctl.Configured) != len(want) {
		t.Errorf("configured %v, want only %v", snap.Sysctl.Configured, want)
	}
	wantSource(t, snap, "sysctl.configured.fs.protected_regular", "/usr/lib/sysctl.d/99-protect-links.conf:9")
	if !slices.Contains(snap.Sysctl.Files, "/etc/sysctl.conf") {
		t.Errorf("files %v: /etc/sysctl.conf not read", snap.Sysctl.Files)
	}

	writeTree(t, root, "etc/sysctl.d/60-web.conf", "# accept queue\nnet.core.somaxconn: 1024\nnet.core.somaxconn = 1024\n")
	snap, findings := pkgFindings(t, root, "somaxconn-low")
	wantErrors(t, snap, "sysctl", map[string]bool{"/etc/sysctl.d/60-web.conf:2": true})
	wantFinding(t, findings, "somaxconn-low", "sysctl.configured.net.core.somaxconn", "/etc/sysctl.d/60-web.conf:3")
}

// TestRealSystemdLogindSysctl: systemd (with base-files' os-release) as
// installed. Every logind.conf line is a comment, so RemoveIPC is
// logind.conf(5)'s default, yes, and removeipc-enabled fires on Debian;
// 50-pid-max.conf sets kernel.pid_max = 4194304. A logind.conf.d drop-in
// (logind.conf(5): "drop-ins ... in /etc/systemd/logind.conf.d/") setting
// RemoveIPC=no quiets it; a later one with a line logind skips and
// RemoveIPC=yes makes it fire naming that line.
func TestRealSystemdLogindSysctl(t *testing.T) {
	root, pkgs := debroot.Root(t, "systemd", "base-files")
	for _, p := range pkgs {
		t.Logf("%s %s", p.Name, p.Version)
	}
	snap, findings := pkgFindings(t, root, "removeipc-enabled")
	noErrors(t, snap, "logind", "sysctl", "services")
	if snap.Logind.RemoveIPC != "yes" || !snap.Logind.RemoveIPCDefault || !snap.Logind.Installed {
		t.Errorf("logind %+v: want installed, RemoveIPC yes by default", snap.Logind)
	}
	if !slices.Equal(snap.Logind.Files, []string{"/etc/systemd/logind.conf"}) {
		t.Errorf("logind files %v", snap.Logind.Files)
	}
	if len(findings) != 1 || !strings.Contains(findings[0].Message, "defaults to yes on debian 12") {
		t.Errorf("removeipc-enabled on stock Debian: %+v", findings)
	}
	if got := snap.Sysctl.Configured["kernel.pid_max"]; got != "4194304" {
		t.Errorf("kernel.pid_max configured %q, want 4194304", got)
	}
	wantSource(t, snap, "sysctl.configured.kernel.pid_max", "/usr/lib/sysctl.d/50-pid-max.conf:16")

	writeTree(t, root, "etc/systemd/logind.conf.d/10-hpc.conf", "[Login]\nRemoveIPC=no\n")
	snap, findings = pkgFindings(t, root, "removeipc-enabled")
	noErrors(t, snap, "logind")
	if len(findings) != 0 {
		t.Errorf("RemoveIPC=no drop-in: %+v", findings)
	}
	writeTree(t, root, "etc/systemd/logind.conf.d/90-site.conf", "[Login]\nRemoveIPC\nRemoveIPC=yes\n")
	snap, findings = pkgFindings(t, root, "removeipc-enabled")
	wantErrors(t, snap, "logind", map[string]bool{"/etc/systemd/logind.conf.d/90-site.conf:2": true})
	wantFinding(t, findings, "removeipc-enabled", "logind.remove_ipc", "/etc/systemd/logind.conf.d/90-site.conf:3")
}

// TestRealSystemdUnitFiles: every unit file and drop-in systemd ships
// reads as config_parse reads it, without an error and to the end, and
// system.conf sets no DefaultLimitMEMLOCK (its line is a comment:
// systemd-system.conf(5) gives the default).
func TestRealSystemdUnitFiles(t *testing.T) {
	root, _ := debroot.Root(t, "systemd")
	n := 0
	err := filepath.WalkDir(filepath.Join(root, "lib/systemd/system"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		_, errs, stopped := parseUnitSetting(data, "Service", "LimitMEMLOCK")
		if len(errs) > 0 || stopped {
			t.Errorf("%s: errors %v, stopped %v", p, errs, stopped)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Errorf("only %d unit files read", n)
	}
	limit, _ := versionsTestCollection(Dir(root)).managerDefaultMemlock()
	if limit != nil {
		t.Errorf("stock system.conf sets DefaultLimitMEMLOCK %+v", limit)
	}
}

// TestRealKmodModules: kmod and systemd as installed, with the /etc/modules
// kmod's postinst writes. aliases.conf holds only alias, options and
// softdep lines (kmod reads all of them), so nothing is blacklisted or
// replaced by an install command, and nothing is set to load. Then
// nv_peer_mem in /etc/modules (its comment: "names of kernel modules that
// should be loaded at boot time, one per line") next to nvidia-peermem in
// modules-load.d: peermem-dual-modules names the /etc/modules line; the
// parameters line postinst's comment allows is one systemd-modules-load,
// which reads the file through modules-load.d/modules.conf, skips.
func TestRealKmodModules(t *testing.T) {
	root, pkgs := debroot.Root(t, "kmod", "systemd")
	for _, p := range pkgs {
		t.Logf("%s %s", p.Name, p.Version)
	}
	// kmod.postinst create_etc_modules, verbatim.
	const etcModulesText = "# /etc/modules: kernel modules to load at boot time.\n#\n# This file contains the names of kernel modules that should be loaded\n# at boot time, one per line. Lines beginning with \"#\" are ignored.\n# Parameters can be specified after the module name.\n\n"
	writeTree(t, root, "etc/modules", etcModulesText)
	snap, _ := pkgFindings(t, root)
	noErrors(t, snap, "modules")
	m := snap.Modules
	if len(m.Configured) != 0 || len(m.Blacklisted) != 0 || len(m.Install) != 0 {
		t.Errorf("modules %+v: want nothing configured, blacklisted or installed", m)
	}

	writeTree(t, root, "etc/modules", etcModulesText+"nv_peer_mem\nbonding max_bonds=2\n")
	writeTree(t, root, "etc/modules-load.d/nvidia-peermem.conf", "nvidia-peermem\n")
	snap, findings := pkgFindings(t, root, "peermem-dual-modules")
	wantErrors(t, snap, "modules", map[string]bool{"/etc/modules:8": true})
	if snap.Modules.Configured["bonding"] {
		t.Error("bonding configured from a line systemd-modules-load cannot look up")
	}
	wantFinding(t, findings, "peermem-dual-modules", "modules.configured.nv_peer_mem", "/etc/modules:7")
}
