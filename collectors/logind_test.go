package collectors

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Ubuntu 22.04's /etc/systemd/logind.conf (systemd 249), as shipped.
const stockLogindConf = `#  This file is part of systemd.
#
#  systemd is free software; you can redistribute it and/or modify it under the
#  terms of the GNU Lesser General Public License as published by the Free
#  Software Foundation; either version 2.1 of the License, or (at your option)
#  any later version.
#
# Entries in this file show the compile time defaults. Local configuration
# should be created by either modifying this file, or by creating "drop-ins" in
# the logind.conf.d/ subdirectory. The latter is generally recommended.
# Defaults can be restored by simply deleting this file and all drop-ins.
#
# Use 'systemd-analyze cat-config systemd/logind.conf' to display the full config.
#
# See logind.conf(5) for details.

[Login]
#NAutoVTs=6
#ReserveVT=6
#KillUserProcesses=no
#KillOnlyUsers=
#KillExcludeUsers=root
#InhibitDelayMaxSec=5
#UserStopDelaySec=10
#HandlePowerKey=poweroff
#HandleSuspendKey=suspend
#HandleHibernateKey=hibernate
#HandleLidSwitch=suspend
#HandleLidSwitchExternalPower=suspend
#HandleLidSwitchDocked=ignore
#HandleRebootKey=reboot
#PowerKeyIgnoreInhibited=no
#SuspendKeyIgnoreInhibited=no
#HibernateKeyIgnoreInhibited=no
#LidSwitchIgnoreInhibited=yes
#RebootKeyIgnoreInhibited=no
#HoldoffTimeoutSec=30s
#IdleAction=ignore
#IdleActionSec=30min
#RuntimeDirectorySize=10%
#RuntimeDirectoryInodesMax=400k
#RemoveIPC=yes
#InhibitorsMax=8192
#SessionsMax=8192
`

// A drop-in as HPC sites write it.
const hpcLogindDropin = `# Keep /dev/shm/nccl-* of the job user when its last session ends.
[Login]
RemoveIPC=no
`

func TestParseLogindConf(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		want        []logindAssignment
		wantStopped bool
		wantErrs    []int
	}{
		{name: "stock file sets nothing", in: stockLogindConf},
		{
			name: "drop-in",
			in:   hpcLogindDropin,
			want: []logindAssignment{{Line: 3, Value: "no", RemoveIPC: false}},
		},
		{
			name: "booleans as parse_boolean reads them, whitespace trimmed",
			in:   "[Login]\nRemoveIPC = YES\nRemoveIPC=off\n  RemoveIPC\t=\t1  \nRemoveIPC=n\nRemoveIPC=On\nRemoveIPC=t\n",
			want: []logindAssignment{
				{Line: 2, Value: "YES", RemoveIPC: true},
				{Line: 3, Value: "off", RemoveIPC: false},
				{Line: 4, Value: "1", RemoveIPC: true},
				{Line: 5, Value: "n", RemoveIPC: false},
				{Line: 6, Value: "On", RemoveIPC: true},
				{Line: 7, Value: "t", RemoveIPC: true},
			},
		},
		{
			name:     "invalid and empty values are ignored, not reset",
			in:       "[Login]\nRemoveIPC=no\nRemoveIPC=maybe\nRemoveIPC=\n",
			want:     []logindAssignment{{Line: 2, Value: "no"}},
			wantErrs: []int{3, 4},
		},
		{
			name: "only [Login] counts",
			in: "RemoveIPC=no\n[Logind]\nRemoveIPC=no\n[X-Vendor]\nFoo=bar\n" +
				"[Login]\nRemoveIPC=yes\n[Other]\nRemoveIPC=no\n",
			want:     []logindAssignment{{Line: 7, Value: "yes", RemoveIPC: true}},
			wantErrs: []int{1, 3, 9},
		},
		{
			name:     "keys are case-sensitive; lines without '=' or key are reported",
			in:       "[Login]\nremoveipc=no\nKillUserProcesses\n=yes\nRemoveIPC=yes\n",
			want:     []logindAssignment{{Line: 5, Value: "yes", RemoveIPC: true}},
			wantErrs: []int{2, 3, 4},
		},
		{
			name: "continuation lines; comments inside are dropped",
			in:   "[Login]\nKillExcludeUsers=root \\\n# a comment\n  ops\nRemoveIPC=\\\nno\n",
			want: []logindAssignment{{Line: 6, Value: "no"}},
		},
		{
			name: "a byte order mark and CRLF line ends",
			in:   "\xef\xbb\xbf[Login]\r\nRemoveIPC=no\r\n",
			want: []logindAssignment{{Line: 2, Value: "no"}},
		},
		{
			name:        "a broken section header stops the parse",
			in:          "[Login]\nRemoveIPC=no\n[Login\nRemoveIPC=yes\n",
			want:        []logindAssignment{{Line: 2, Value: "no"}},
			wantStopped: true,
			wantErrs:    []int{3},
		},
		{
			name:        "quotes in a section name stop the parse",
			in:          "[\"Login\"]\nRemoveIPC=no\n",
			wantStopped: true,
			wantErrs:    []int{1},
		},
		{
			name:        "invalid UTF-8 stops the parse",
			in:          "[Login]\nRemoveIPC=yes\nKillOnlyUsers=\xff\nRemoveIPC=no\n",
			want:        []logindAssignment{{Line: 2, Value: "yes", RemoveIPC: true}},
			wantStopped: true,
			wantErrs:    []int{3},
		},
		{
			name: "a dangling continuation at the end of the file",
			in:   "[Login]\nRemoveIPC=no\\",
			want: []logindAssignment{{Line: 2, Value: "no"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseLogindConf([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got.RemoveIPC); diff != "" {
				t.Errorf("assignments (-want +got):\n%s", diff)
			}
			if got.Stopped != tt.wantStopped {
				t.Errorf("stopped = %v, want %v", got.Stopped, tt.wantStopped)
			}
			if diff := cmp.Diff(tt.wantErrs, confErrorLines(t, errs)); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemoveIPCDefault(t *testing.T) {
	tests := []struct {
		name string
		os   snapshot.OSRelease
		want bool
		why  string
	}{
		{"ubuntu", snapshot.OSRelease{ID: "ubuntu", IDLike: "debian", VersionID: "22.04", PrettyName: "Ubuntu 22.04.4 LTS"}, true,
			"Ubuntu 22.04.4 LTS (upstream systemd default RemoveIPC=yes)"},
		{"debian", snapshot.OSRelease{ID: "debian", VersionID: "12"}, true, "debian 12 (upstream systemd default RemoveIPC=yes)"},
		{"fedora", snapshot.OSRelease{ID: "fedora", VersionID: "40", PrettyName: "Fedora Linux 40 (Server Edition)"}, true,
			"Fedora Linux 40 (Server Edition) (upstream systemd default RemoveIPC=yes)"},
		{"rocky", snapshot.OSRelease{ID: "rocky", IDLike: "rhel centos fedora", VersionID: "9.4", PrettyName: "Rocky Linux 9.4 (Blue Onyx)"}, false,
			"Rocky Linux 9.4 (Blue Onyx) (RHEL-family systemd is patched to default RemoveIPC=no)"},
		{"rhel", snapshot.OSRelease{ID: "rhel", IDLike: "fedora", VersionID: "8.10"}, false,
			"rhel 8.10 (RHEL-family systemd is patched to default RemoveIPC=no)"},
		{"oracle", snapshot.OSRelease{ID: "ol", IDLike: "fedora", VersionID: "9.3"}, false,
			"ol 9.3 (RHEL-family systemd is patched to default RemoveIPC=no)"},
		{"amazon linux 2", snapshot.OSRelease{ID: "amzn", IDLike: "centos rhel fedora", VersionID: "2"}, false,
			"amzn 2 (RHEL-family systemd is patched to default RemoveIPC=no)"},
		{"unknown", snapshot.OSRelease{}, true, "unknown OS (upstream systemd default RemoveIPC=yes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := removeIPCDefault(tt.os)
			if got != tt.want || why != tt.why {
				t.Errorf("removeIPCDefault = %v %q, want %v %q", got, why, tt.want, tt.why)
			}
		})
	}
}

func TestCollectLogind(t *testing.T) {
	ubuntu := snapshot.OSRelease{ID: "ubuntu", VersionID: "24.04", PrettyName: "Ubuntu 24.04.1 LTS"}
	rocky := snapshot.OSRelease{ID: "rocky", IDLike: "rhel centos fedora", VersionID: "9.4", PrettyName: "Rocky Linux 9.4 (Blue Onyx)"}
	tests := []struct {
		name      string
		fsys      fstest.MapFS
		os        snapshot.OSRelease
		want      snapshot.Logind
		wantFrom  string
		wantErrAt []string
	}{
		{
			name: "nothing anywhere: the distribution default",
			fsys: fstest.MapFS{},
			os:   rocky,
			want: snapshot.Logind{RemoveIPC: "no", RemoveIPCDefault: true, Files: []string{}},
			wantFrom: "default: Rocky Linux 9.4 (Blue Onyx) " +
				"(RHEL-family systemd is patched to default RemoveIPC=no)",
		},
		{
			name: "/etc main file hides the vendor one; drop-ins override both",
			fsys: fstest.MapFS{
				"etc/systemd/logind.conf":                    confTextFile("[Login]\nRemoveIPC=no\n"),
				"usr/lib/systemd/logind.conf":                confTextFile("[Login]\nRemoveIPC=maybe\n"),
				"usr/lib/systemd/logind.conf.d/20-a.conf":    confTextFile("[Login]\nRemoveIPC=yes\n"),
				"usr/lib/systemd/logind.conf.d/50-site.conf": confTextFile("[Login]\nRemoveIPC=no\n"),
				"etc/systemd/logind.conf.d/50-site.conf":     confTextFile("[Login]\nRemoveIPC=yes\n"),
				"run/systemd/logind.conf.d/30-run.conf":      confTextFile("[Login]\nRemoveIPC=no\n"),
			},
			os: ubuntu,
			want: snapshot.Logind{RemoveIPC: "yes", Files: []string{
				"/etc/systemd/logind.conf",
				"/usr/lib/systemd/logind.conf.d/20-a.conf",
				"/run/systemd/logind.conf.d/30-run.conf",
				"/etc/systemd/logind.conf.d/50-site.conf",
			}},
			wantFrom: "/etc/systemd/logind.conf.d/50-site.conf:2",
		},
		{
			name:     "the vendor main file counts when /etc has none",
			fsys:     fstest.MapFS{"usr/lib/systemd/logind.conf": confTextFile("[Login]\nRemoveIPC=no\n")},
			os:       ubuntu,
			want:     snapshot.Logind{RemoveIPC: "no", Files: []string{"/usr/lib/systemd/logind.conf"}},
			wantFrom: "/usr/lib/systemd/logind.conf:2",
		},
		{
			name: "an /etc main file linked to /dev/null masks the vendor one",
			fsys: fstest.MapFS{
				"etc/systemd/logind.conf":                 confSymlink("/dev/null"),
				"usr/lib/systemd/logind.conf":             confTextFile("[Login]\nRemoveIPC=no\n"),
				"usr/lib/systemd/logind.conf.d/10-x.conf": confTextFile("[Login]\nRemoveIPC=no\n"),
				"etc/systemd/logind.conf.d/10-x.conf":     confSymlink("/dev/null"),
			},
			os:       ubuntu,
			want:     snapshot.Logind{RemoveIPC: "yes", RemoveIPCDefault: true, Files: []string{}},
			wantFrom: "default: Ubuntu 24.04.1 LTS (upstream systemd default RemoveIPC=yes)",
		},
		{
			name: "a broken drop-in keeps earlier values and stops later files",
			fsys: fstest.MapFS{
				"etc/systemd/logind.conf.d/10-a.conf": confTextFile("[Login]\nRemoveIPC=no\n"),
				"etc/systemd/logind.conf.d/20-b.conf": confTextFile("[Login]\nRemoveIPC=maybe\n[Login\n"),
				"etc/systemd/logind.conf.d/30-c.conf": confTextFile("[Login]\nRemoveIPC=yes\n"),
			},
			os: ubuntu,
			want: snapshot.Logind{RemoveIPC: "no", Files: []string{
				"/etc/systemd/logind.conf.d/10-a.conf",
				"/etc/systemd/logind.conf.d/20-b.conf",
			}},
			wantFrom:  "/etc/systemd/logind.conf.d/10-a.conf:2",
			wantErrAt: []string{"/etc/systemd/logind.conf.d/20-b.conf", "/etc/systemd/logind.conf.d/20-b.conf"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConfTestCollection(FS(tt.fsys), Options{}, tt.os)
			collectLogind(c)
			if diff := cmp.Diff(tt.want, c.snap.Logind); diff != "" {
				t.Errorf("logind (-want +got):\n%s", diff)
			}
			if got := c.snap.Sources["logind.remove_ipc"].String(); got != tt.wantFrom {
				t.Errorf("provenance %q, want %q", got, tt.wantFrom)
			}
			var errAt []string
			for _, e := range c.snap.Errors {
				errAt = append(errAt, e.Path)
			}
			if diff := cmp.Diff(tt.wantErrAt, errAt); diff != "" {
				t.Errorf("error paths (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzLogindConf(f *testing.F) {
	f.Add([]byte(stockLogindConf))
	f.Add([]byte(hpcLogindDropin))
	f.Add([]byte("\xef\xbb\xbf[Login]\r\nRemoveIPC=\\\n# c\nno\nremoveipc=1\n=x\n[Login\n"))
	f.Add([]byte("RemoveIPC=no\n[X]\nRemoveIPC=yes\n[Login]\nRemoveIPC=maybe\nRemoveIPC=\xff\n"))
	for _, data := range debroot.Files(f, "systemd", "etc/systemd/logind.conf") {
		f.Add(data)
	}
	for _, data := range fixtureEntries(f, "etc/systemd/logind.conf") {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		conf, errs := parseLogindConf(data)
		lines := len(systemdLines(data))
		for _, a := range conf.RemoveIPC {
			if a.Line < 1 || a.Line > lines {
				t.Fatalf("assignment line %d outside 1..%d", a.Line, lines)
			}
			if b, ok := parseSystemdBool(a.Value); !ok || b != a.RemoveIPC {
				t.Fatalf("accepted %q as %v", a.Value, a.RemoveIPC)
			}
		}
		for _, err := range errs {
			var le *confLineError
			if !errors.As(err, &le) || !errors.Is(err, ErrParse) || le.Line < 1 || le.Line > lines {
				t.Fatalf("bad error %v (lines %d)", err, lines)
			}
		}
		if conf.Stopped && len(errs) == 0 {
			t.Fatal("stopped without saying why")
		}
		if !strings.Contains(string(data), "RemoveIPC") && len(conf.RemoveIPC) > 0 {
			t.Fatal("assignment from nowhere")
		}
	})
}

// The OS comes from the os family in a full collection; here it is given,
// so the fixture roots' defaults are checked whatever that family does.
func TestCollectLogindFixtureDefaults(t *testing.T) {
	tests := []struct {
		root, want, from string
		os               snapshot.OSRelease
	}{
		{
			root: "rhel-node",
			os:   snapshot.OSRelease{ID: "rocky", IDLike: "rhel centos fedora", VersionID: "9.4", PrettyName: "Rocky Linux 9.4 (Blue Onyx)"},
			want: "no",
			from: "default: Rocky Linux 9.4 (Blue Onyx) (RHEL-family systemd is patched to default RemoveIPC=no)",
		},
		{
			root: "web-node",
			os:   snapshot.OSRelease{ID: "ubuntu", IDLike: "debian", VersionID: "22.04", PrettyName: "Ubuntu 22.04.4 LTS"},
			want: "yes",
			from: "default: Ubuntu 22.04.4 LTS (upstream systemd default RemoveIPC=yes)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.root, func(t *testing.T) {
			c := newConfTestCollection(Dir("../testdata/hosts/"+tt.root), Options{}, tt.os)
			collectLogind(c)
			got := c.snap.Logind
			if got.RemoveIPC != tt.want || !got.RemoveIPCDefault || c.snap.Sources["logind.remove_ipc"].String() != tt.from {
				t.Errorf("remove_ipc %q default %v from %q, want %q from %q",
					got.RemoveIPC, got.RemoveIPCDefault, c.snap.Sources["logind.remove_ipc"].String(), tt.want, tt.from)
			}
		})
	}
}

// TestLogindInstalled: a host without systemd-logind never applies RemoveIPC,
// so policies must be able to tell (seen on a real GPU VM without systemd).
func TestLogindInstalled(t *testing.T) {
	for _, tt := range []struct {
		name   string
		fsys   fstest.MapFS
		want   bool
		source string
	}{
		{"merged usr", fstest.MapFS{"usr/lib/systemd/systemd-logind": {Mode: 0o755}}, true, "/usr/lib/systemd/systemd-logind"},
		{"split usr", fstest.MapFS{"lib/systemd/systemd-logind": {Mode: 0o755}}, true, "/lib/systemd/systemd-logind"},
		{"absent", fstest.MapFS{"etc/os-release": {Data: []byte("ID=ubuntu\n")}}, false, "default: no systemd-logind binary in /usr/lib/systemd or /lib/systemd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := Collect(context.Background(), Target{Files: FS(tt.fsys)}, Options{Hostname: "h"})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Logind.Installed != tt.want || snap.Sources["logind.installed"].String() != tt.source {
				t.Errorf("installed = %v from %q, want %v from %q", snap.Logind.Installed, snap.Sources["logind.installed"].String(), tt.want, tt.source)
			}
		})
	}
}
