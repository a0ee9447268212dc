package collectors

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// A real /proc/modules excerpt from an H100 node (addresses hidden, as for a
// reader without CAP_SYSLOG).
const procModulesSample = `nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)
nvidia_uvm 1437696 0 - Live 0x0000000000000000 (POE)
nvidia_modeset 1306624 1 nvidia_drm, Live 0x0000000000000000 (POE)
nvidia 56770560 3 nvidia_peermem,nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)
ib_core 434176 7 nvidia_peermem,rdma_ucm,ib_ipoib,ib_umad,mlx5_ib,ib_uverbs,rdma_cm, Live 0xffffffffc0a2d000 (OE)
xfs 2363392 2 - Live 0xffffffffc0400000
`

func TestParseProcModules(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []loadedModule
		wantErr []string
	}{
		{
			name: "real lines",
			in:   procModulesSample,
			want: []loadedModule{
				{"nvidia_peermem", "Live", 1}, {"nvidia_uvm", "Live", 2}, {"nvidia_modeset", "Live", 3},
				{"nvidia", "Live", 4}, {"ib_core", "Live", 5}, {"xfs", "Live", 6},
			},
		},
		{
			name: "loading, unloading, no unload support",
			in:   "a 1 - - Loading 0x0\nb 2 0 - Unloading 0x0 (-)\nc 3 - - Live 0x0\n",
			want: []loadedModule{{"a", "Loading", 1}, {"b", "Unloading", 2}, {"c", "Live", 3}},
		},
		{
			name:    "truncated and bad lines are skipped",
			in:      "nvidia_uvm 1523712 0 - Live 0x0 (POE)\nnvidia 5677\nbad-name 1 0 - Live 0x0\nx 12k 0 - Live 0x0\ny 1 0 - Dead 0x0\nib_core 434176\n",
			want:    []loadedModule{{"nvidia_uvm", "Live", 1}},
			wantErr: []string{"line 2: 2 fields", "line 3: bad module name", "line 4: size", "line 5: unknown state", "line 6: 2 fields"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseProcModules([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

func TestParseModuleLists(t *testing.T) {
	tests := []struct {
		name    string
		parse   func([]byte) ([]configuredModule, []error)
		in      string
		want    []configuredModule
		wantErr []string
	}{
		{
			name:  "modules-load.d with both comment styles and a dash",
			parse: parseModulesLoadD,
			in:    "# GPUDirect RDMA\n; legacy comment\n\n  nvidia-peermem  \nrdma_ucm\n",
			want:  []configuredModule{{"nvidia_peermem", 4}, {"rdma_ucm", 5}},
		},
		{
			name:    "modules-load.d takes no parameters",
			parse:   parseModulesLoadD,
			in:      "nvidia peermem\nbonding max_bonds=2\nok\nbad/name\n",
			want:    []configuredModule{{"ok", 3}},
			wantErr: []string{"line 1: \"nvidia peermem\" is not one module name", "line 2:", "line 4: bad module name"},
		},
		{
			name:  "/etc/modules with parameters",
			parse: parseEtcModules,
			in:    "# /etc/modules: kernel modules to load at boot time.\n#\nlp\nbonding max_bonds=2 mode=4\n\n",
			want:  []configuredModule{{"lp", 3}, {"bonding", 4}},
		},
		{
			name:    "/etc/modules bad name",
			parse:   parseEtcModules,
			in:      "nv.peer\n",
			wantErr: []string{"line 1: bad module name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := tt.parse([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			versionsCheckErrors(t, errs, tt.wantErr)
		})
	}
}

func TestCollectModulesPrecedence(t *testing.T) {
	fsys := fstest.MapFS{
		"proc/modules": {Data: []byte(procModulesSample)},
		// Same name in three directories: /etc wins, then /run.
		"usr/lib/modules-load.d/peermem.conf": {Data: []byte("nv_peer_mem\n")},
		"run/modules-load.d/peermem.conf":     {Data: []byte("nv-peer-mem\n")},
		"etc/modules-load.d/peermem.conf":     {Data: []byte("nvidia-peermem\n")},
		// Applied in file-name order across directories.
		"lib/modules-load.d/00-first.conf": {Data: []byte("# split /usr\nib_umad\n")},
		"usr/lib/modules-load.d/zz.conf":   {Data: []byte("nvidia_peermem\nrdma_ucm\n")},
		"usr/lib/modules-load.d/README":    {Data: []byte("not a .conf file\n")},
		"etc/modules":                      {Data: []byte("# Debian\nbonding mode=4\n")},
	}
	c := versionsTestCollection(FS(fsys))
	collectModules(c)
	m := c.snap.Modules
	if diff := cmp.Diff([]string{"ib_core", "nvidia", "nvidia_modeset", "nvidia_peermem", "nvidia_uvm", "xfs"}, m.Loaded); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"bonding": true, "ib_umad": true, "nvidia_peermem": true, "rdma_ucm": true}, m.Configured); diff != "" {
		t.Errorf("configured (-want +got):\n%s", diff)
	}
	for fact, want := range map[string]string{
		"modules.loaded":                    "/proc/modules",
		"modules.configured.bonding":        "/etc/modules:2",
		"modules.configured.ib_umad":        "/lib/modules-load.d/00-first.conf:2",
		"modules.configured.nvidia_peermem": "/etc/modules-load.d/peermem.conf:1",
		"modules.configured.rdma_ucm":       "/usr/lib/modules-load.d/zz.conf:2",
	} {
		if got := c.snap.Sources[fact].String(); got != want {
			t.Errorf("%s from %q, want %q", fact, got, want)
		}
	}
	if len(c.snap.Errors) != 0 {
		t.Errorf("errors: %v", c.snap.Errors)
	}
}

func FuzzProcModules(f *testing.F) {
	for _, s := range []string{procModulesSample, "nvidia 5677\n", "a 1 - - Loading 0x0", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mods, errs := parseProcModules(data)
		lines := strings.Count(string(data), "\n") + 1
		for _, m := range mods {
			if !isModuleName(m.Name) || m.Line < 1 || m.Line > lines {
				t.Errorf("%+v (input has %d lines)", m, lines)
			}
		}
		for _, err := range errs {
			if !errors.Is(err, ErrParse) {
				t.Errorf("%v does not wrap ErrParse", err)
			}
		}
	})
}

func FuzzModulesLoadD(f *testing.F) {
	// The last is the /etc/modules kmod's postinst writes (kmod 30).
	for _, s := range []string{"# c\n; c\nnvidia-peermem\n", "nvidia peermem\n", "bonding max_bonds=2\n", "", "a\rb\x00c\r\n",
		"# /etc/modules: kernel modules to load at boot time.\n#\n# This file contains the names of kernel modules that should be loaded\n# at boot time, one per line. Lines beginning with \"#\" are ignored.\n# Parameters can be specified after the module name.\n\n"} {
		f.Add([]byte(s))
	}
	// rdma-core's /etc/rdma/modules lists, which systemd-modules-load reads.
	for _, s := range realpkgSeeds(f, "rdma-core", "etc/rdma/modules/*.conf") {
		f.Add(s)
	}
	// suse-module-tools' sg.conf (sles15-node).
	for _, data := range fixtureEntries(f, "usr/lib/modules-load.d/*.conf") {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// systemd-modules-load's read_line ends lines at \r and NUL too.
		lines := max(strings.Count(string(data), "\n")+1, len(systemdLines(data)))
		for _, parse := range []func([]byte) ([]configuredModule, []error){parseModulesLoadD, parseEtcModules} {
			mods, errs := parse(data)
			for _, m := range mods {
				if !isModuleName(m.Name) || strings.Contains(m.Name, "-") || m.Line < 1 || m.Line > lines {
					t.Errorf("%+v (input has %d lines)", m, lines)
				}
			}
			for _, err := range errs {
				if !errors.Is(err, ErrParse) {
					t.Errorf("%v does not wrap ErrParse", err)
				}
			}
		}
	})
}
