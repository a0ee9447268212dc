package collectors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
)

// Real modprobe.d files: Ubuntu's kmod blacklist.conf (excerpt), the
// NVIDIA driver package's file, iwlwifi.conf's continued remove line, and a
// hardening file in the CIS style.
const (
	ubuntuBlacklistConf = `# This file lists those modules which we don't want to be loaded by
# alias expansion, usually so some other driver will be loaded for the
# device instead.

# evbug is a debug tool that should be loaded explicitly
blacklist evbug

# these drivers are very simple, the HID drivers are usually preferred
blacklist usbmouse
blacklist usbkbd

# replaced by e100
blacklist eepro100
`
	nvidiaDriverConf = `blacklist nouveau
blacklist lbm-nouveau
options nouveau modeset=0
alias nouveau off
alias lbm-nouveau off
options nvidia NVreg_PreserveVideoMemoryAllocations=1 NVreg_TemporaryFilePath=/var
softdep nvidia post: nvidia-uvm
`
	iwlwifiConf = `# /etc/modprobe.d/iwlwifi.conf
# iwlwifi will dyamically load either iwldvm or iwlmvm depending on the
# microcode file installed on the system.  When removing iwlwifi, first
# remove the iwl?vm module and then iwlwifi.
remove iwlwifi \
(/sbin/lsmod | grep -o -e ^iwlmvm -e ^iwldvm -e ^iwlwifi | xargs /sbin/rmmod) \
&& /sbin/modprobe -r mac80211
`
	peermemOffConf = "# nvidia-peermem replaces it\nblacklist nv_peer_mem\ninstall nv_peer_mem /bin/false\n"
)

func TestParseModprobeConf(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []modprobeDirective
		wantErr []string
	}{
		{
			name: "ubuntu blacklist.conf",
			in:   ubuntuBlacklistConf,
			want: []modprobeDirective{
				{Cmd: "blacklist", Module: "evbug", Line: 6},
				{Cmd: "blacklist", Module: "usbmouse", Line: 9},
				{Cmd: "blacklist", Module: "usbkbd", Line: 10},
				{Cmd: "blacklist", Module: "eepro100", Line: 13},
			},
		},
		{
			// suse-module-tools' 10-unsupported-modules.conf: a command
			// SUSE's kmod reads. A trailing comment after a blacklisted
			// name (SUSE's 50-blacklist.conf) is not part of it.
			name: "SUSE files",
			in:   "allow_unsupported_modules 0\nblacklist opl3sa2                 # Bug 219758\n",
			want: []modprobeDirective{{Cmd: "blacklist", Module: "opl3sa2", Line: 2}},
		},
		{
			name: "nvidia driver: dashes become underscores, options and aliases checked and skipped",
			in:   nvidiaDriverConf,
			want: []modprobeDirective{
				{Cmd: "blacklist", Module: "nouveau", Line: 1},
				{Cmd: "blacklist", Module: "lbm_nouveau", Line: 2},
			},
		},
		{
			name: "a continued line counts from its first line",
			in:   iwlwifiConf + "install nv-peer-mem \\\n  /bin/true\n",
			want: []modprobeDirective{{Cmd: "install", Module: "nv_peer_mem", Command: "/bin/true", Line: 8}},
		},
		{
			name: "install keeps the whole command; blanks and tabs separate words",
			in:   peermemOffConf + "\tinstall\tnvidia-peermem   /sbin/modprobe --ignore-install nvidia-peermem $CMDLINE_OPTS  \n",
			want: []modprobeDirective{
				{Cmd: "blacklist", Module: "nv_peer_mem", Line: 2},
				{Cmd: "install", Module: "nv_peer_mem", Command: "/bin/false", Line: 3},
				{Cmd: "install", Module: "nvidia_peermem", Command: "/sbin/modprobe --ignore-install nvidia-peermem $CMDLINE_OPTS", Line: 4},
			},
		},
		{
			name: "an install pattern keeps dashes inside brackets",
			in:   "install snd-[a-c]* /bin/true\n",
			want: []modprobeDirective{{Cmd: "install", Module: "snd_[a-c]*", Command: "/bin/true", Line: 1}},
		},
		{
			name: "a comment continued by a backslash swallows the next line",
			in:   "# off \\\nblacklist nv_peer_mem\nblacklist evbug\n",
			want: []modprobeDirective{{Cmd: "blacklist", Module: "evbug", Line: 3}},
		},
		{
			name: "lines kmod ignores as bad",
			in: "blacklist\ninstall nv_peer_mem\ninstall nv_peer_mem   \noptions nvidia\nalias nouveau\n" +
				"blacklist nv_peer*\nblacklist snd-[ab\ninclude /etc/modprobe.conf\nblaclist nv_peer_mem\nblacklist ok\n",
			want: []modprobeDirective{{Cmd: "blacklist", Module: "ok", Line: 10}},
			wantErr: []string{
				"line 1: blacklist: no module name",
				"line 2: install: nothing after the module name",
				"line 3: install: nothing after the module name",
				"line 4: options: nothing after the module name",
				"line 5: alias: no module for alias",
				`line 6: blacklist: "nv_peer*" is not a module name`,
				"line 7: blacklist: unbalanced brackets",
				"line 8: include: kmod no longer reads this command",
				"line 9: blaclist: unknown command",
			},
		},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseModprobeConf([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

// TestCollectModprobeD reads modprobe.d from a real directory tree: a file
// in /etc hides the same name elsewhere, winners are read in name order
// across directories (so the first install line by that order wins), a
// /dev/null link masks a vendor file, hidden and non-.conf files are not
// read, and a bad line is an error naming file and line.
func TestCollectModprobeD(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/modules", procModulesSample)
	write("etc/modules-load.d/peermem.conf", "nv_peer_mem\nnvidia-peermem\n")
	write("lib/modprobe.d/blacklist.conf", ubuntuBlacklistConf)
	// Hidden by /etc's file of the same name: never read.
	write("usr/lib/modprobe.d/50-peermem.conf", "blacklist nvidia_peermem\ninstall nvidia_peermem /bin/false\n")
	write("etc/modprobe.d/50-peermem.conf", "options nvidia_peermem peerdirect_support=1\n")
	// Read before 99-fleetaudit.conf by name, though in a lower directory.
	write("run/modprobe.d/10-peer.conf", "install nv-peer-mem /sbin/modprobe --ignore-install nv_peer_mem\n")
	write("etc/modprobe.d/99-fleetaudit.conf", "# Written by fleetaudit\n"+peermemOffConf)
	write("usr/lib/modprobe.d/nvidia-graphics-drivers.conf", nvidiaDriverConf)
	if err := os.Symlink("/dev/null", filepath.Join(root, "etc/modprobe.d/nvidia-graphics-drivers.conf")); err != nil {
		t.Fatal(err)
	}
	write("etc/modprobe.d/.hidden.conf", "blacklist hidden\n")
	write("etc/modprobe.d/README", "blacklist readme\n")
	write("usr/local/lib/modprobe.d/zz-bad.conf", "blacklist evbug\nblaclist xfs\n")

	c := versionsTestCollection(Dir(root))
	collectModules(c)
	m := c.snap.Modules
	if diff := cmp.Diff(map[string]bool{"nv_peer_mem": true, "nvidia_peermem": true}, m.Configured); diff != "" {
		t.Errorf("configured, unchanged by modprobe.d (-want +got):\n%s", diff)
	}
	wantBlack := map[string]bool{"evbug": true, "usbmouse": true, "usbkbd": true, "eepro100": true, "nv_peer_mem": true}
	if diff := cmp.Diff(wantBlack, m.Blacklisted); diff != "" {
		t.Errorf("blacklisted (-want +got):\n%s", diff)
	}
	wantInstall := map[string]string{"nv_peer_mem": "/sbin/modprobe --ignore-install nv_peer_mem"}
	if diff := cmp.Diff(wantInstall, m.Install); diff != "" {
		t.Errorf("install (-want +got):\n%s", diff)
	}
	for fact, want := range map[string]string{
		"modules.blacklisted.evbug":       "/lib/modprobe.d/blacklist.conf:6",
		"modules.blacklisted.nv_peer_mem": "/etc/modprobe.d/99-fleetaudit.conf:3",
		"modules.install.nv_peer_mem":     "/run/modprobe.d/10-peer.conf:1",
	} {
		if got := c.snap.Sources[fact].String(); got != want {
			t.Errorf("%s from %q, want %q", fact, got, want)
		}
	}
	var errs []string
	for _, e := range c.snap.Errors {
		errs = append(errs, e.Collector+" "+e.Path+" "+e.Reason)
	}
	if diff := cmp.Diff([]string{"modules /usr/local/lib/modprobe.d/zz-bad.conf parse error: line 2: blaclist: unknown command; kmod ignores the line"}, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func FuzzModprobeConf(f *testing.F) {
	for _, s := range []string{ubuntuBlacklistConf, nvidiaDriverConf, iwlwifiConf, peermemOffConf,
		"options nvidia NVreg_RestrictProfilingToAdminUsers=0\n", "install nv_peer_mem /bin/false", "blacklist snd-[ab\\\n]", ""} {
		f.Add([]byte(s))
	}
	for _, s := range realpkgSeeds(f, "rdma-core", "etc/modprobe.d/*.conf") {
		f.Add(s)
	}
	for _, data := range debroot.Files(f, "kmod", "lib/modprobe.d/*.conf") {
		f.Add(data)
	}
	// SUSE's suse-module-tools files (sles15-node).
	for _, data := range fixtureEntries(f, "etc/modprobe.d/*.conf") {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dirs, errs := parseModprobeConf(data)
		lines := strings.Count(string(data), "\n") + 1
		for _, d := range dirs {
			if d.Line < 1 || d.Line > lines {
				t.Errorf("%+v (input has %d lines)", d, lines)
			}
			switch d.Cmd {
			case "blacklist":
				if !isModuleName(d.Module) || d.Command != "" {
					t.Errorf("%+v", d)
				}
			case "install":
				if d.Module == "" || strings.ContainsAny(d.Module, " \t\n") || d.Command == "" || d.Command != strings.Trim(d.Command, " \t") {
					t.Errorf("%+v", d)
				}
			default:
				t.Errorf("%+v: unexpected command", d)
			}
		}
		for _, err := range errs {
			var le *confLineError
			if !errors.Is(err, ErrParse) || !errors.As(err, &le) || le.Line < 1 || le.Line > lines {
				t.Errorf("%v: not a parse error naming a line of %d", err, lines)
			}
		}
	})
}
