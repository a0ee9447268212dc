package collectors

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/internal/debroot"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Ubuntu 22.04's /etc/sysctl.d/10-network-security.conf.
const ubuntuNetworkSecurityConf = `
# Turn on Source Address Verification in all interfaces to
# prevent some spoofing attacks.
net.ipv4.conf.default.rp_filter=2
net.ipv4.conf.all.rp_filter=2
`

// systemd's /usr/lib/sysctl.d/50-default.conf (v252, as RHEL 9 ships it).
const systemdDefaultSysctlConf = `#  This file is part of systemd.
#
#  systemd is free software; you can redistribute it and/or modify it
#  under the terms of the GNU Lesser General Public License as published by
#  the Free Software Foundation; either version 2.1 of the License, or
#  (at your option) any later version.

# See sysctl.d(5) and core(5) for documentation.

# To override settings in this file, create a local file in /etc
# (e.g. /etc/sysctl.d/90-override.conf), and put any assignments
# there.

# System Request functionality of the kernel (SYNC)
#
# Use kernel.sysrq = 1 to allow all keys.
# See https://www.kernel.org/doc/html/latest/admin-guide/sysrq.html for a list
# of values and keys.
kernel.sysrq = 16

# Append the PID to the core filename
kernel.core_uses_pid = 1

# https://bugzilla.redhat.com/show_bug.cgi?id=1689346
kernel.kptr_restrict = 1

# Source route verification
net.ipv4.conf.default.rp_filter = 2
net.ipv4.conf.*.rp_filter = 2
-net.ipv4.conf.all.rp_filter

# Do not accept source routing
net.ipv4.conf.default.accept_source_route = 0
net.ipv4.conf.*.accept_source_route = 0
-net.ipv4.conf.all.accept_source_route

# Promote secondary addresses when the primary address is removed
net.ipv4.conf.default.promote_secondaries = 1
net.ipv4.conf.*.promote_secondaries = 1
-net.ipv4.conf.all.promote_secondaries

# ping(8) without CAP_NET_ADMIN and CAP_NET_RAW
# The upper limit is set to 2^31-1. Values greater than that get rejected by
# the kernel because of this definition in linux/include/net/ping.h:
#   #define GID_T_MAX (((gid_t)~0U) - 1)
# where GID_T_MAX is 2^32-1, also the kernel checks that the value
# is smaller than or equal to GID_T_MAX.
-net.ipv4.ping_group_range = 0 2147483647

# Fair Queue CoDel packet scheduler to fight bufferbloat
-net.core.default_qdisc = fq_codel

# Enable hard and soft link protection
fs.protected_hardlinks = 1
fs.protected_symlinks = 1

# Enable regular file and FIFO protection
fs.protected_regular = 1
fs.protected_fifos = 1
`

func TestParseSysctlConf(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []sysctlAssignment
		wantErrs []int // lines
	}{
		{
			name: "assignments, comments and blank lines",
			in:   "# comment\n; also a comment\n\n  vm.swappiness = 10  \nkernel.printk=4 4 1 7\n",
			want: []sysctlAssignment{
				{Line: 4, Key: "vm.swappiness", Value: "10"},
				{Line: 5, Key: "kernel.printk", Value: "4 4 1 7"},
			},
		},
		{
			name: "slash and dot separators normalise to the dotted name",
			in: "kernel/domainname = foo\n" +
				"net/ipv4/conf/enp3s0.200/forwarding = 1\n" +
				"net.ipv4.conf.enp3s0/200.forwarding = 1\n" +
				"/net//ipv4/./ip_forward/ = 1\n" +
				"kernel..sysrq = 1\n",
			want: []sysctlAssignment{
				{Line: 1, Key: "kernel.domainname", Value: "foo"},
				{Line: 2, Key: "net.ipv4.conf.enp3s0/200.forwarding", Value: "1"},
				{Line: 3, Key: "net.ipv4.conf.enp3s0/200.forwarding", Value: "1"},
				{Line: 4, Key: "net.ipv4.ip_forward", Value: "1"},
				{Line: 5, Key: "kernel.sysrq", Value: "1"},
			},
		},
		{
			name: "ignore-failure prefix, glob and exclusion",
			in:   "-net.core.default_qdisc = fq_codel\nnet.ipv4.conf.*.rp_filter = 2\n-net.ipv4.conf.all.rp_filter\n- kernel.sysrq=16\n",
			want: []sysctlAssignment{
				{Line: 1, Key: "net.core.default_qdisc", Value: "fq_codel", IgnoreFailure: true},
				{Line: 2, Key: "net.ipv4.conf.*.rp_filter", Value: "2"},
				{Line: 3, Key: "net.ipv4.conf.all.rp_filter", Exclude: true},
				{Line: 4, Key: "kernel.sysrq", Value: "16", IgnoreFailure: true},
			},
		},
		{
			name: "value keeps inner whitespace and later equals signs, may be empty",
			in:   "kernel.core_pattern = |/bin/x %p a=b \r\nvm.dirty_ratio =\n",
			want: []sysctlAssignment{
				{Line: 1, Key: "kernel.core_pattern", Value: "|/bin/x %p a=b"},
				{Line: 2, Key: "vm.dirty_ratio", Value: ""},
			},
		},
		{
			name: "malformed lines are reported and skipped",
			in:   "vm.swappiness 10\nnet.core.somaxconn = 4096\n= 5\n-\nnet/../../etc/passwd = x\n",
			want: []sysctlAssignment{
				{Line: 2, Key: "net.core.somaxconn", Value: "4096"},
			},
			wantErrs: []int{1, 3, 4, 5},
		},
		{
			name: "Ubuntu 10-network-security.conf",
			in:   ubuntuNetworkSecurityConf,
			want: []sysctlAssignment{
				{Line: 4, Key: "net.ipv4.conf.default.rp_filter", Value: "2"},
				{Line: 5, Key: "net.ipv4.conf.all.rp_filter", Value: "2"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseSysctlConf([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("assignments (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, confErrorLines(t, errs)); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

// confErrorLines returns the line of each parse error, failing on any error
// that is not a line error wrapping ErrParse.
func confErrorLines(t *testing.T, errs []error) []int {
	t.Helper()
	var lines []int
	for _, err := range errs {
		var le *confLineError
		if !errors.As(err, &le) || !errors.Is(err, ErrParse) {
			t.Fatalf("error %v is not a line error wrapping ErrParse", err)
		}
		if !strings.Contains(err.Error(), "line ") {
			t.Errorf("error %q does not name its line", err)
		}
		lines = append(lines, le.Line)
	}
	return lines
}

func TestSysctlName(t *testing.T) {
	tests := []struct{ in, name, file string }{
		{"vm.max_map_count", "vm.max_map_count", "/proc/sys/vm/max_map_count"},
		{"vm/max_map_count", "vm.max_map_count", "/proc/sys/vm/max_map_count"},
		{"net.ipv4.conf.eth0/100.rp_filter", "net.ipv4.conf.eth0/100.rp_filter", "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"},
		{"net/ipv4/conf/eth0.100/rp_filter", "net.ipv4.conf.eth0/100.rp_filter", "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"},
		{"fs.file-max", "fs.file-max", "/proc/sys/fs/file-max"},
		{"kernel", "kernel", "/proc/sys/kernel"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := sysctlName(tt.in); got != tt.name {
				t.Errorf("sysctlName(%q) = %q, want %q", tt.in, got, tt.name)
			}
			if got := sysctlFile(sysctlName(tt.in)); got != tt.file {
				t.Errorf("sysctlFile = %q, want %q", got, tt.file)
			}
		})
	}
}

func FuzzSysctlConf(f *testing.F) {
	f.Add([]byte(ubuntuNetworkSecurityConf))
	f.Add([]byte(systemdDefaultSysctlConf))
	f.Add([]byte("kernel/domainname=x\n-net.ipv4.conf.*.rp_filter\n=\n-\n\r\n a.b..c/./d = \t v \n"))
	f.Add([]byte("net/../../etc/passwd = 1\n[x]\nk=v=w"))
	f.Add([]byte("a.b = 1\rc.d = 2\n\x00e.f = 3\n\r\x00"))
	for _, data := range debroot.Files(f, "procps", "etc/sysctl.conf", "usr/lib/sysctl.d/*.conf") {
		f.Add(data)
	}
	for _, data := range debroot.Files(f, "systemd", "usr/lib/sysctl.d/*.conf") {
		f.Add(data)
	}
	// aaa_base's 50-default.conf and sysctl.conf (sles15-node) among them.
	for _, pattern := range []string{"usr/lib/sysctl.d/*.conf", "etc/sysctl.conf"} {
		for _, data := range fixtureEntries(f, pattern) {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, errs := parseSysctlConf(data)
		lines := len(systemdLines(data))
		for _, a := range got {
			if a.Line < 1 || a.Line > lines {
				t.Fatalf("assignment line %d outside 1..%d", a.Line, lines)
			}
			if sysctlKeyProblem(a.Key) != "" {
				t.Fatalf("accepted bad key %q", a.Key)
			}
			if a.Value != strings.Trim(a.Value, sysctlWhitespace) {
				t.Fatalf("value %q not trimmed", a.Value)
			}
			if a.Exclude && (a.Value != "" || a.IgnoreFailure) {
				t.Fatalf("exclusion with a value: %+v", a)
			}
			// The dotted form is ambiguous only for a first component
			// holding a dot, which no kernel has; the file path is what
			// must be sound.
			if file := sysctlFile(a.Key); path.Clean(file) != file || !strings.HasPrefix(file, "/proc/sys/") {
				t.Fatalf("key %q maps to %q", a.Key, file)
			}
		}
		for _, err := range errs {
			var le *confLineError
			if !errors.As(err, &le) || !errors.Is(err, ErrParse) || le.Line < 1 || le.Line > lines {
				t.Fatalf("bad error %v (lines %d)", err, lines)
			}
		}
	})
}

// newConfTestCollection builds a collection for running one family against
// src, with the OS already known.
func newConfTestCollection(src Source, opts Options, osr snapshot.OSRelease) *collection {
	if opts.MaxFileSize == 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	snap := snapshot.New("test")
	snap.OS = osr
	return &collection{ctx: context.Background(), src: src, snap: snap, opts: opts}
}

func confSymlink(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
}

func confTextFile(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestCollectSysctlLayering(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/sysctl.conf":                       confTextFile("vm.swappiness = 1\n"),
		"etc/sysctl.d/99-sysctl.conf":           confSymlink("../sysctl.conf"),
		"etc/sysctl.d/60-tune.conf":             confTextFile("net.core.somaxconn = 4096\nkernel.numa_balancing = 0\n"),
		"usr/lib/sysctl.d/60-tune.conf":         confTextFile("net.core.somaxconn = 128\nvm.overcommit_memory = 1\n"),
		"usr/lib/sysctl.d/50-coredump.conf":     confTextFile("kernel.core_pattern=|/usr/lib/systemd/systemd-coredump %P\n"),
		"etc/sysctl.d/50-coredump.conf":         confSymlink("/dev/null"),
		"run/sysctl.d/70-run.conf":              confTextFile("vm.swappiness = 30\nnet.ipv4.conf.all.rp_filter = 1\n"),
		"usr/lib/sysctl.d/80-glob.conf":         confTextFile("net.ipv4.conf.*.rp_filter = 2\n-net.ipv4.conf.all.rp_filter\n"),
		"usr/local/lib/sysctl.d/.hidden.conf":   confTextFile("vm.swappiness = 99\n"),
		"lib/sysctl.d/10-old.conf":              confTextFile("kernel.pid_max = 4194304\n"),
		"proc/sys/vm/swappiness":                confTextFile("1\n"),
		"proc/sys/net/core/somaxconn":           confTextFile("4096\n"),
		"proc/sys/net/ipv4/ip_local_port_range": confTextFile("32768\t60999\n"),
		"proc/sys/kernel/pid_max":               confTextFile("4194304\n"),
		"proc/sys/kernel/shmmax":                confTextFile("18446744073692774399\n"),
		"proc/sys/kernel/numa_balancing":        &fstest.MapFile{Mode: fs.ModeDir | 0o755},
	}
	c := newConfTestCollection(FS(fsys), Options{ExtraSysctls: []string{"kernel/shmmax", "net.*", "net/../../etc/passwd"}}, snapshot.OSRelease{})
	collectSysctl(c)

	want := snapshot.Sysctl{
		Configured: map[string]string{
			"kernel.numa_balancing":     "0",
			"kernel.pid_max":            "4194304",
			"net.core.somaxconn":        "4096",
			"net.ipv4.conf.*.rp_filter": "2",
			"vm.swappiness":             "1",
		},
		Running: map[string]string{
			"kernel.pid_max":               "4194304",
			"kernel.shmmax":                "18446744073692774399",
			"net.core.somaxconn":           "4096",
			"net.ipv4.ip_local_port_range": "32768\t60999",
			"vm.swappiness":                "1",
		},
		Missing: []string{},
		Files: []string{
			"/lib/sysctl.d/10-old.conf",
			"/etc/sysctl.d/60-tune.conf",
			"/run/sysctl.d/70-run.conf",
			"/usr/lib/sysctl.d/80-glob.conf",
			"/etc/sysctl.conf",
		},
	}
	if diff := cmp.Diff(want, c.snap.Sysctl); diff != "" {
		t.Errorf("sysctl (-want +got):\n%s", diff)
	}
	wantSources := map[string]string{
		"sysctl.configured.kernel.numa_balancing":     "/etc/sysctl.d/60-tune.conf:2",
		"sysctl.configured.kernel.pid_max":            "/lib/sysctl.d/10-old.conf:1",
		"sysctl.configured.net.core.somaxconn":        "/etc/sysctl.d/60-tune.conf:1",
		"sysctl.configured.net.ipv4.conf.*.rp_filter": "/usr/lib/sysctl.d/80-glob.conf:1",
		"sysctl.configured.vm.swappiness":             "/etc/sysctl.conf:1",
		"sysctl.running.kernel.pid_max":               "/proc/sys/kernel/pid_max",
		"sysctl.running.kernel.shmmax":                "/proc/sys/kernel/shmmax",
		"sysctl.running.net.core.somaxconn":           "/proc/sys/net/core/somaxconn",
		"sysctl.running.net.ipv4.ip_local_port_range": "/proc/sys/net/ipv4/ip_local_port_range",
		"sysctl.running.vm.swappiness":                "/proc/sys/vm/swappiness",
	}
	if diff := cmp.Diff(wantSources, sourceTexts(c.snap.Sources)); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	wantErrs := []string{"/proc/sys/kernel/numa_balancing", "net.*", "net/../../etc/passwd"}
	var gotErrs []string
	for _, e := range c.snap.Errors {
		if e.Collector != "sysctl" {
			t.Errorf("error from collector %q", e.Collector)
		}
		gotErrs = append(gotErrs, e.Path)
	}
	if diff := cmp.Diff(wantErrs, slices.Sorted(slices.Values(gotErrs))); diff != "" {
		t.Errorf("error paths (-want +got):\n%s", diff)
	}
}

func TestCollectSysctlUnlinkedLegacyFileAppliesLast(t *testing.T) {
	fsys := fstest.MapFS{
		"etc/sysctl.conf":           confTextFile("vm.swappiness = 1\n"),
		"etc/sysctl.d/zz-last.conf": confTextFile("vm.swappiness = 5\n"),
	}
	c := newConfTestCollection(FS(fsys), Options{}, snapshot.OSRelease{})
	collectSysctl(c)
	if got := c.snap.Sysctl.Configured["vm.swappiness"]; got != "1" {
		t.Errorf("vm.swappiness = %q, want 1 from /etc/sysctl.conf read last", got)
	}
	if got := c.snap.Sources["sysctl.configured.vm.swappiness"].String(); got != "/etc/sysctl.conf:1" {
		t.Errorf("provenance %q", got)
	}
}

func TestCollectSysctlMissingNeedsProcSys(t *testing.T) {
	conf := confTextFile("net.ipv4.tcp_tw_recycle = 1\nnet.core.somaxconn = 4096\n")
	withProc := fstest.MapFS{
		"etc/sysctl.d/60-net.conf":    conf,
		"proc/sys/net/core/somaxconn": confTextFile("4096\n"),
	}
	c := newConfTestCollection(FS(withProc), Options{}, snapshot.OSRelease{})
	collectSysctl(c)
	if diff := cmp.Diff([]string{"net.ipv4.tcp_tw_recycle"}, c.snap.Sysctl.Missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	// A rendered config repo has no /proc: nothing is missing, nothing runs.
	repo := fstest.MapFS{"etc/sysctl.d/60-net.conf": conf}
	c = newConfTestCollection(FS(repo), Options{}, snapshot.OSRelease{})
	collectSysctl(c)
	if len(c.snap.Sysctl.Missing) != 0 || len(c.snap.Sysctl.Running) != 0 || len(c.snap.Errors) != 0 {
		t.Errorf("without /proc/sys: missing %v running %v errors %v", c.snap.Sysctl.Missing, c.snap.Sysctl.Running, c.snap.Errors)
	}
}
