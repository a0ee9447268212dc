package collectors

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// confFact is one fact the sysctl, limits and logind families must produce
// on a fixture root, and where it must say it came from.
type confFact struct {
	path, value, from string
}

// confError is an expected collection error: collector, path and a part
// of the reason.
type confError struct {
	collector, path, reason string
}

// TestCollectConfigFamiliesFixtures runs the whole collection over each
// fixture root and checks the sysctl, limits and logind facts and their
// provenance against the root's story (testdata/hosts/README.md).
func TestCollectConfigFamiliesFixtures(t *testing.T) {
	tests := []struct {
		root string
		opts Options
		// osID is the os-release ID of the root; the logind default
		// depends on it once the os family has run.
		osID       string
		facts      []confFact
		absent     []string
		missing    []string
		sysctlFrom []string // Sysctl.Files
		limitsFrom []string // Limits.Files
		logindFrom []string // Logind.Files
		// removeIPC is the logind default for osID when no file sets it
		// ("" when a file sets it).
		defaultRemoveIPC string
		errs             []confError
	}{
		{
			root: "gpu-node",
			opts: Options{LimitsDomains: []string{"trainer", "@hpc"}},
			osID: "ubuntu",
			facts: []confFact{
				{"sysctl.configured.vm.max_map_count", "262144", "/etc/sysctl.d/60-gpu-training.conf:8"},
				{"sysctl.configured.kernel.sysrq", "176", "/etc/sysctl.d/10-magic-sysrq.conf:26"},
				{"sysctl.configured.net.core.rmem_max", "268435456", "/etc/sysctl.d/60-gpu-training.conf:3"},
				{"sysctl.configured.kernel.pid_max", "4194304", "/usr/lib/sysctl.d/50-pid-max.conf:13"},
				{"sysctl.running.kernel.numa_balancing", "1", "/proc/sys/kernel/numa_balancing"},
				{"sysctl.running.vm.max_map_count", "262144", "/proc/sys/vm/max_map_count"},
				{"sysctl.running.net.ipv4.ip_local_port_range", "32768\t60999", "/proc/sys/net/ipv4/ip_local_port_range"},
				{"sysctl.running.net.ipv4.tcp_rmem", "4096\t87380\t134217728", "/proc/sys/net/ipv4/tcp_rmem"},
				{"limits.effective.*.memlock.soft", "unlimited", "/etc/security/limits.d/90-rdma.conf:3"},
				{"limits.effective.*.memlock.hard", "unlimited", "/etc/security/limits.d/90-rdma.conf:4"},
				{"limits.effective.trainer.nofile.hard", "1048576", "/etc/security/limits.d/95-hpc.conf:2"},
				{"limits.effective.trainer.stack.soft", "unlimited", "/etc/security/limits.d/95-hpc.conf:3"},
				{"limits.effective.@hpc.memlock.hard", "unlimited", "/etc/security/limits.d/90-rdma.conf:4"},
				{"logind.remove_ipc", "no", "/etc/systemd/logind.conf.d/10-hpc.conf:5"},
			},
			absent: []string{"sysctl.running.net.ipv4.tcp_tw_recycle", "limits.effective.*.nofile", "limits.effective.*.stack"},
			sysctlFrom: []string{
				"/etc/sysctl.d/10-console-messages.conf",
				"/etc/sysctl.d/10-ipv6-privacy.conf",
				"/etc/sysctl.d/10-kernel-hardening.conf",
				"/etc/sysctl.d/10-magic-sysrq.conf",
				"/etc/sysctl.d/10-network-security.conf",
				"/etc/sysctl.d/10-ptrace.conf",
				"/etc/sysctl.d/10-zeropage.conf",
				"/usr/lib/sysctl.d/50-pid-max.conf",
				"/etc/sysctl.d/60-gpu-training.conf",
				"/etc/sysctl.conf",
			},
			limitsFrom: []string{"/etc/security/limits.conf", "/etc/security/limits.d/90-rdma.conf", "/etc/security/limits.d/95-hpc.conf"},
			logindFrom: []string{"/etc/systemd/logind.conf", "/etc/systemd/logind.conf.d/10-hpc.conf"},
		},
		{
			root: "web-node",
			osID: "ubuntu",
			facts: []confFact{
				{"sysctl.configured.net.core.somaxconn", "4096", "/etc/sysctl.d/60-net.conf:2"},
				{"sysctl.configured.net.ipv4.ip_local_port_range", "1024 65000", "/etc/sysctl.d/60-net.conf:3"},
				{"sysctl.configured.net.ipv4.tcp_tw_recycle", "1", "/etc/sysctl.d/60-net.conf:6"},
				{"sysctl.running.net.ipv4.ip_local_port_range", "1024\t65000", "/proc/sys/net/ipv4/ip_local_port_range"},
				{"sysctl.running.kernel.numa_balancing", "0", "/proc/sys/kernel/numa_balancing"},
				{"limits.effective.*.nofile.soft", "1048576", "/etc/security/limits.d/60-nofile.conf:2"},
				{"limits.effective.*.nofile.hard", "1048576", "/etc/security/limits.d/60-nofile.conf:3"},
			},
			absent:           []string{"limits.effective.*.memlock", "limits.effective.trainer"},
			missing:          []string{"net.ipv4.tcp_tw_recycle"},
			limitsFrom:       []string{"/etc/security/limits.conf", "/etc/security/limits.d/60-nofile.conf"},
			logindFrom:       []string{"/etc/systemd/logind.conf"},
			defaultRemoveIPC: "yes",
		},
		{
			root: "dropins",
			opts: Options{LimitsDomains: []string{"trainer", "@hpc"}},
			osID: "ubuntu",
			facts: []confFact{
				// Same name in /etc and /usr/lib: only the /etc file is read.
				{"sysctl.configured.kernel.numa_balancing", "0", "/etc/sysctl.d/60-gpu-node.conf:2"},
				{"sysctl.configured.net.core.rmem_max", "268435456", "/etc/sysctl.d/60-gpu-node.conf:3"},
				{"sysctl.configured.vm.max_map_count", "1048576", "/etc/sysctl.d/10-map-count.conf:4"},
				{"sysctl.running.kernel.numa_balancing", "1", "/proc/sys/kernel/numa_balancing"},
				// limits.d lowers the wildcard's hard memlock; the soft
				// value limits.conf sets is capped to it.
				{"limits.effective.*.memlock.hard", "65536", "/etc/security/limits.d/50-site.conf:5"},
				{"limits.effective.*.memlock.soft", "65536", "/etc/security/limits.d/50-site.conf:5"},
				{"limits.effective.*.nofile.hard", "65536", "/etc/security/limits.d/90-defaults.conf:2"},
				// The group entry wins over the later wildcard entry.
				{"limits.effective.@hpc.memlock.soft", "unlimited", "/etc/security/limits.d/50-site.conf:2"},
				{"limits.effective.@hpc.nofile.soft", "1048576", "/etc/security/limits.d/50-site.conf:4"},
				{"limits.effective.trainer.nofile.hard", "1048576", "/etc/security/limits.d/50-site.conf:4"},
				{"limits.effective.trainer.memlock.hard", "unlimited", "/etc/security/limits.d/50-site.conf:3"},
				{"logind.remove_ipc", "yes", "/etc/systemd/logind.conf.d/50-site.conf:4"},
			},
			absent: []string{
				"sysctl.configured.vm.swappiness",       // only in the overridden /usr/lib file
				"sysctl.configured.kernel.core_pattern", // masked by a /dev/null link
			},
			sysctlFrom: []string{
				"/etc/sysctl.d/10-kernel-hardening.conf",
				"/etc/sysctl.d/10-map-count.conf",
				"/etc/sysctl.d/10-network-security.conf",
				"/usr/lib/sysctl.d/50-pid-max.conf",
				"/etc/sysctl.d/60-gpu-node.conf",
				"/etc/sysctl.conf",
			},
			limitsFrom: []string{"/etc/security/limits.conf", "/etc/security/limits.d/50-site.conf", "/etc/security/limits.d/90-defaults.conf"},
			logindFrom: []string{
				"/etc/systemd/logind.conf",
				"/usr/lib/systemd/logind.conf.d/20-defaults.conf",
				"/etc/systemd/logind.conf.d/50-site.conf",
			},
		},
		{
			root: "rhel-node",
			osID: "rocky",
			facts: []confFact{
				{"sysctl.configured.net.ipv4.conf.*.rp_filter", "2", "/usr/lib/sysctl.d/50-default.conf:29"},
				{"sysctl.configured.net.ipv4.conf.default.rp_filter", "2", "/usr/lib/sysctl.d/50-default.conf:28"},
				{"sysctl.configured.net.ipv4.ping_group_range", "0 2147483647", "/usr/lib/sysctl.d/50-default.conf:48"},
				{"sysctl.configured.kernel.numa_balancing", "0", "/etc/sysctl.d/90-gpu.conf:2"},
				{"sysctl.configured.kernel.yama.ptrace_scope", "0", "/usr/lib/sysctl.d/10-default-yama-scope.conf:34"},
				{"sysctl.running.net.ipv4.ping_group_range", "0\t2147483647", "/proc/sys/net/ipv4/ping_group_range"},
				{"limits.effective.*.memlock.soft", "unlimited", "/etc/security/limits.d/rdma.conf:2"},
				{"limits.effective.*.memlock.hard", "unlimited", "/etc/security/limits.d/rdma.conf:3"},
			},
			// "-net.ipv4.conf.all.rp_filter" keeps the key out of the glob.
			absent:           []string{"sysctl.configured.net.ipv4.conf.all.rp_filter", "sysctl.running.net.ipv4.conf.*.rp_filter"},
			limitsFrom:       []string{"/etc/security/limits.conf", "/etc/security/limits.d/rdma.conf"},
			logindFrom:       []string{"/etc/systemd/logind.conf"},
			defaultRemoveIPC: "no",
		},
		{
			root: "garbage",
			facts: []confFact{
				{"sysctl.configured.net.core.somaxconn", "1024", "/etc/sysctl.d/20-pasted.conf:5"},
				{"sysctl.configured.vm.dirty_ratio", "15", "/etc/sysctl.d/20-pasted.conf:7"},
				{"limits.effective.*.core.hard", "0", "/etc/security/limits.conf:7"},
			},
			absent:           []string{"sysctl.running.vm.swappiness", "sysctl.configured.vm.swappiness"},
			missing:          []string{"vm.dirty_ratio"},
			sysctlFrom:       []string{"/etc/sysctl.d/20-pasted.conf"},
			limitsFrom:       []string{"/etc/security/limits.conf"},
			logindFrom:       []string{"/etc/systemd/logind.conf", "/etc/systemd/logind.conf.d/50-broken.conf"},
			defaultRemoveIPC: "yes",
			errs: []confError{
				{"limits", "/etc/security/limits.conf", "line 2: want \"<domain> <type> <item> <value>\", got 3 field(s)"},
				{"limits", "/etc/security/limits.conf", "line 3: bad value \"lots\" for nofile"},
				{"limits", "/etc/security/limits.conf", "line 4: unknown limit type \"hart\""},
				{"limits", "/etc/security/limits.conf", "line 5: unknown limit item \"nofiles\""},
				{"limits", "/etc/security/limits.conf", "line 6: invalid uid/gid range \"alice:bob\""},
				{"limits", "/etc/security/limits.conf", "line 8: want \"<domain> <type> <item> <value>\", got 1 field(s)"},
				{"limits", "/etc/security/limits.conf", "line 9: a \"%\" domain applies to maxlogins only"},
				{"logind", "/etc/systemd/logind.conf", "line 2: RemoveIPC=maybe is not a boolean"},
				{"logind", "/etc/systemd/logind.conf", "line 3: missing '='"},
				{"logind", "/etc/systemd/logind.conf", "line 4: unknown key \"removeipc\""},
				{"logind", "/etc/systemd/logind.conf.d/50-broken.conf", "line 1: invalid section header"},
				{"sysctl", "/etc/sysctl.d/10-dir.conf", "is a directory"},
				{"sysctl", "/etc/sysctl.d/20-pasted.conf", "line 2: not an assignment"},
				{"sysctl", "/etc/sysctl.d/20-pasted.conf", "line 3: not an assignment"},
				{"sysctl", "/etc/sysctl.d/20-pasted.conf", "line 4: empty sysctl name"},
				{"sysctl", "/etc/sysctl.d/20-pasted.conf", "line 6: empty sysctl name"},
				{"sysctl", "/proc/sys/vm/swappiness", "is a directory"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.root, func(t *testing.T) {
			root := filepath.Join("..", "testdata", "hosts", tt.root)
			snap, err := Collect(context.Background(), Target{Files: Dir(root)}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := snapshot.Generic(snap)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.facts {
				got, ok := snapshot.Lookup(doc, f.path)
				if !ok || got != f.value {
					t.Errorf("%s = %#v (found %v), want %q", f.path, got, ok, f.value)
				}
				if from := snap.Sources[f.path].String(); from != f.from {
					t.Errorf("sources[%s] = %q, want %q", f.path, from, f.from)
				}
			}
			for _, p := range tt.absent {
				if v, ok := snapshot.Lookup(doc, p); ok {
					t.Errorf("%s = %#v, want absent", p, v)
				}
			}
			if diff := cmp.Diff(append([]string{}, tt.missing...), snap.Sysctl.Missing); diff != "" {
				t.Errorf("sysctl.missing (-want +got):\n%s", diff)
			}
			for name, want := range map[string]struct{ want, got []string }{
				"sysctl.files": {tt.sysctlFrom, snap.Sysctl.Files},
				"limits.files": {tt.limitsFrom, snap.Limits.Files},
				"logind.files": {tt.logindFrom, snap.Logind.Files},
			} {
				if want.want == nil {
					continue
				}
				if diff := cmp.Diff(want.want, want.got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
			}
			checkRemoveIPCDefault(t, snap, tt.osID, tt.defaultRemoveIPC)
			checkConfErrors(t, snap.Errors, tt.errs)
			checkConfSources(t, root, doc, snap.Sources)
		})
	}
}

// checkRemoveIPCDefault checks the logind default. Until the os family
// fills snap.OS (it runs first in a full build), the unknown-OS default
// applies; once it does, the OS must be the root's and its default used.
func checkRemoveIPCDefault(t *testing.T, snap *snapshot.Snapshot, osID, want string) {
	t.Helper()
	if want == "" {
		if snap.Logind.RemoveIPCDefault {
			t.Errorf("logind.remove_ipc_default = true, want a file to set it")
		}
		return
	}
	if !snap.Logind.RemoveIPCDefault {
		t.Errorf("logind.remove_ipc_default = false, want true")
	}
	from := snap.Sources["logind.remove_ipc"].String()
	if snap.OS.ID == "" {
		t.Logf("os family produced no ID; checking the unknown-OS default")
		want = "yes"
	} else if snap.OS.ID != osID && osID != "" {
		t.Errorf("os.id = %q, want %q", snap.OS.ID, osID)
	}
	if snap.Logind.RemoveIPC != want || !strings.HasPrefix(from, "default: ") {
		t.Errorf("logind.remove_ipc = %q from %q, want default %q", snap.Logind.RemoveIPC, from, want)
	}
}

func checkConfErrors(t *testing.T, got []snapshot.CollectionError, want []confError) {
	t.Helper()
	var mine []snapshot.CollectionError
	for _, e := range got {
		switch e.Collector {
		case "sysctl", "limits", "logind":
			mine = append(mine, e)
		}
	}
	if len(mine) != len(want) {
		t.Errorf("%d errors from sysctl/limits/logind, want %d:\n%v", len(mine), len(want), mine)
		return
	}
	for i, w := range want {
		e := mine[i]
		if e.Collector != w.collector || e.Path != w.path || !strings.Contains(e.Reason, w.reason) {
			t.Errorf("error %d = %+v, want %s %s ...%s...", i, e, w.collector, w.path, w.reason)
		}
	}
}

// checkConfSources checks that every provenance these families record
// resolves as a fact path and points at a file present in the root.
func checkConfSources(t *testing.T, root string, doc map[string]any, sources map[string]snapshot.Provenance) {
	t.Helper()
	for fact, from := range sources {
		if !strings.HasPrefix(fact, "sysctl.") && !strings.HasPrefix(fact, "limits.") && !strings.HasPrefix(fact, "logind.") {
			continue
		}
		if _, ok := snapshot.Lookup(doc, fact); !ok {
			t.Errorf("sources has %q, which Lookup cannot resolve", fact)
		}
		if from.Default != "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, from.File)); err != nil {
			t.Errorf("sources[%s] = %q: %v", fact, from, err)
		}
	}
}
