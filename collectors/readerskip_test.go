package collectors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

func writeTree(t *testing.T, root, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, name, text)
}

// ruleFindings collects root and returns the findings of rules on it.
func ruleFindings(t *testing.T, root string, rules ...string) (*snapshot.Snapshot, []policies.Finding) {
	t.Helper()
	ctx := context.Background()
	target := Target{Origin: snapshot.Origin{Kind: "local", Root: root}, Files: Dir(root)}
	snap := collectGuarded(t, ctx, target, fixtureOptions("readers"))
	return snap, evalRules(t, snap, nil, rules...)
}

// wantFinding checks that rule fired citing fact from source ("file:line").
func wantFinding(t *testing.T, findings []policies.Finding, rule, fact, source string) {
	t.Helper()
	for _, f := range findings {
		if f.Rule != rule {
			continue
		}
		for _, ev := range f.Evidence {
			if ev.Fact == fact && ev.Source == source {
				return
			}
		}
		t.Errorf("%s fired without %s from %s: %+v", rule, fact, source, f.Evidence)
		return
	}
	t.Errorf("%s did not fire (findings %+v)", rule, findings)
}

// wantErrors checks the collector's errors: each of want ("file:line",
// skipped or not) and no other for those files.
func wantErrors(t *testing.T, snap *snapshot.Snapshot, collector string, want map[string]bool) {
	t.Helper()
	got := map[string]bool{}
	for _, e := range snap.Errors {
		if e.Collector != collector {
			continue
		}
		var line int
		fmt.Sscanf(e.Reason, "parse error: line %d:", &line)
		got[fmt.Sprintf("%s:%d", e.Path, line)] = e.Skipped
	}
	for at, skipped := range want {
		s, ok := got[at]
		switch {
		case !ok:
			t.Errorf("no %s error for %s; errors %+v", collector, at, snap.Errors)
		case s != skipped:
			t.Errorf("%s error for %s: skipped %v, want %v", collector, at, s, skipped)
		}
	}
	for at := range got {
		if _, ok := want[at]; !ok {
			t.Errorf("unexpected %s error for %s", collector, at)
		}
	}
}

// systemd-sysctl logs "Line is not an assignment, ignoring" and applies
// the other lines (sysctl.c parse_file): the key is configured as the
// valid line sets it, and sysctl-not-applied fires on it.
func TestSysctlLineSystemdSkips(t *testing.T) {
	root := copyFixture(t, "gpu-node")
	writeTree(t, root, "etc/sysctl.d/70-site.conf",
		"net.core.somaxconn 1024\n\x89PNG\x1a\xff\xfe\n\x00-\nnet.core.somaxconn = 1024\r\n")
	snap, findings := ruleFindings(t, root, "sysctl-not-applied")
	if got := snap.Sysctl.Configured["net.core.somaxconn"]; got != "1024" {
		t.Errorf("net.core.somaxconn configured %q, want 1024", got)
	}
	// "\n\x00" is one line end to read_line, so "-" (an exclusion with
	// no name) is line 3, and "\r\n" ends the assignment on line 4.
	wantErrors(t, snap, "sysctl", map[string]bool{
		"/etc/sysctl.d/70-site.conf:1": true,
		"/etc/sysctl.d/70-site.conf:2": true,
		"/etc/sysctl.d/70-site.conf:3": true,
	})
	wantFinding(t, findings, "sysctl-not-applied", "sysctl.configured.net.core.somaxconn", "/etc/sysctl.d/70-site.conf:4")
}

// logind ignores a line without '=' and an invalid boolean (conf-parser.c
// parse_line, config_parse_bool), and a file config_parse gives up on ends
// the reading with what was parsed: RemoveIPC is what logind applies.
func TestLogindLinesLogindSkips(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		from  string
		errs  map[string]bool
	}{
		{
			name: "bad lines around a valid one",
			files: map[string]string{
				"etc/systemd/logind.conf.d/90-site.conf": "[Login]\nKillUserProcesses\nRemoveIPC=maybe\nRemoveIPC=yes\n=no\n",
			},
			from: "/etc/systemd/logind.conf.d/90-site.conf:4",
			errs: map[string]bool{
				"/etc/systemd/logind.conf.d/90-site.conf:2": true,
				"/etc/systemd/logind.conf.d/90-site.conf:3": true,
				"/etc/systemd/logind.conf.d/90-site.conf:5": true,
			},
		},
		{
			// 95-late.conf is never read: config_parse_many_files returns
			// at 90-site.conf's broken header.
			name: "a broken header ends the reading",
			files: map[string]string{
				"etc/systemd/logind.conf.d/90-site.conf": "[Login]\nRemoveIPC=yes\n[Login\nRemoveIPC=no\n",
				"etc/systemd/logind.conf.d/95-late.conf": "[Login]\nRemoveIPC=no\n",
			},
			from: "/etc/systemd/logind.conf.d/90-site.conf:2",
			errs: map[string]bool{"/etc/systemd/logind.conf.d/90-site.conf:3": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := copyFixture(t, "gpu-node")
			for name, text := range tt.files {
				writeTree(t, root, name, text)
			}
			snap, findings := ruleFindings(t, root, "removeipc-enabled")
			if snap.Logind.RemoveIPC != "yes" || snap.Logind.RemoveIPCDefault {
				t.Errorf("RemoveIPC %q (default %v), want yes from %s", snap.Logind.RemoveIPC, snap.Logind.RemoveIPCDefault, tt.from)
			}
			wantErrors(t, snap, "logind", tt.errs)
			wantFinding(t, findings, "removeipc-enabled", "logind.remove_ipc", tt.from)
		})
	}
}

// kmod ignores a bad modprobe.d line ("ignoring bad line starting with"),
// systemd-modules-load a modules-load.d line that names no module; the
// rest applies, and peermem-dual-modules fires on nv_peer_mem configured
// next to nvidia_peermem. /etc/modules, which Debian's systemd reads
// through modules-load.d/modules.conf, loads nothing for a line with
// parameters.
func TestModuleLinesKmodSkips(t *testing.T) {
	root := copyFixture(t, "gpu-node")
	writeTree(t, root, "etc/modules-load.d/nv-peer-mem.conf", "nv peer mem\n\x89PNG\nnv-peer-mem\n")
	writeTree(t, root, "etc/modprobe.d/local.conf", "  # indented\nsoftdep\nblacklist nv_peer_mem extra words\\\n are one line\ninstall nvidia-peermem\n")
	writeTree(t, root, "etc/modules", "# /etc/modules\nib_umad\nbonding max_bonds=2\n")
	snap, findings := ruleFindings(t, root, "peermem-dual-modules")
	m := snap.Modules
	if !m.Configured["nv_peer_mem"] || !m.Configured["ib_umad"] || m.Configured["bonding"] {
		t.Errorf("configured %v, want nv_peer_mem and ib_umad, not bonding", m.Configured)
	}
	if !m.Blacklisted["nv_peer_mem"] || len(m.Install) != 0 {
		t.Errorf("blacklisted %v, install %v: want nv_peer_mem blacklisted, no install command", m.Blacklisted, m.Install)
	}
	wantErrors(t, snap, "modules", map[string]bool{
		"/etc/modules-load.d/nv-peer-mem.conf:1": true,
		"/etc/modules-load.d/nv-peer-mem.conf:2": true,
		"/etc/modprobe.d/local.conf:1":           true,
		"/etc/modprobe.d/local.conf:2":           true,
		"/etc/modprobe.d/local.conf:5":           true,
		"/etc/modules:3":                         true,
	})
	// A blacklist stops systemd-modules-load: nv_peer_mem is not set to
	// load, so the rule stays quiet; without it the rule fires.
	if len(findings) != 0 {
		t.Errorf("peermem-dual-modules fired with nv_peer_mem blacklisted: %+v", findings)
	}
	writeTree(t, root, "etc/modprobe.d/local.conf", "  # indented\nsoftdep\n")
	_, findings = ruleFindings(t, root, "peermem-dual-modules")
	wantFinding(t, findings, "peermem-dual-modules", "modules.configured.nv_peer_mem", "/etc/modules-load.d/nv-peer-mem.conf:3")
}

// systemd ignores a LimitMEMLOCK= it cannot parse, an empty one included
// (config_parse_rlimit: "Failed to parse resource value, ignoring"), and a
// line without '='; the drop-in's valid value stays and
// service-memlock-too-low fires on it. A unit file config_parse gives up
// on does not load, so that error is not skipped.
func TestUnitLinesSystemdSkips(t *testing.T) {
	root := copyFixture(t, "gpu-node")
	writeTree(t, root, "usr/lib/systemd/system/slurmd.service", "[Service]\nExecStart=/usr/sbin/slurmd\n")
	writeTree(t, root, "etc/systemd/system/slurmd.service.d/50-memlock.conf",
		"[Service]\nLimitMEMLOCK=64M\nLimitMEMLOCK=\nLimitMEMLOCK=512KB\nLimitMEMLOCK=2G:1G\nbroken\n")
	snap, findings := ruleFindings(t, root, "service-memlock-too-low")
	u := snap.Services.Units["slurmd.service"]
	if u.Memlock == nil || *u.Memlock != (snapshot.MemlockLimit{Soft: "65536", Hard: "65536"}) {
		t.Errorf("slurmd memlock %+v, want 64M from line 2", u.Memlock)
	}
	const dropin = "/etc/systemd/system/slurmd.service.d/50-memlock.conf"
	wantErrors(t, snap, "services", map[string]bool{dropin + ":3": true, dropin + ":4": true, dropin + ":5": true, dropin + ":6": true})
	wantFinding(t, findings, "service-memlock-too-low", "services.units.slurmd.service.memlock", dropin+":2")

	writeTree(t, root, "usr/lib/systemd/system/slurmd.service", "[Service\nExecStart=/usr/sbin/slurmd\n")
	snap, _ = ruleFindings(t, root, "service-memlock-too-low")
	for _, e := range snap.Errors {
		if e.Path == "/usr/lib/systemd/system/slurmd.service" && (e.Skipped || !strings.Contains(e.Reason, "line 1:")) {
			t.Errorf("unit file systemd cannot load: %+v, want an unskipped error at line 1", e)
		}
	}
}

// systemdLines ends lines where read_line() does (systemd fileio.c: \n,
// \r, \0, and the pairs \r\n and \n\r with an optional \0 after).
func TestSystemdLines(t *testing.T) {
	for in, want := range map[string][]string{
		"":                 nil,
		"a":                {"a"},
		"a\n":              {"a"},
		"a\r\nb":           {"a", "b"},
		"a\n\rb\n":         {"a", "b"},
		"a\n\nb":           {"a", "", "b"},
		"a\r\rb":           {"a", "", "b"},
		"a\x00b\x00":       {"a", "b"},
		"a\r\n\x00b":       {"a", "b"},
		"a\x00\nb":         {"a", "", "b"},
		"x=1\ry=2\r\nz=3":  {"x=1", "y=2", "z=3"},
		"\n":               {""},
		"\xff\xfe\x00\x00": {"\xff\xfe", ""},
	} {
		if got := systemdLines([]byte(in)); !slices.Equal(got, want) {
			t.Errorf("systemdLines(%q) = %q, want %q", in, got, want)
		}
	}
}
