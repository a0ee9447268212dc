package remediate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/policies"
)

const hdr = "# Written by fleetaudit remediate: overrides for this layer's fleets.\n# Edit values here; fleetaudit replaces its keys in place and keeps the rest.\n"

func TestDropinEdits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      func([]byte) []byte
		old, want string
	}{
		{"sysctl new", func(b []byte) []byte {
			return editSysctl(b, map[string]string{"vm.max_map_count": "262144", "kernel.numa_balancing": "0"})
		},
			"", hdr + "kernel.numa_balancing = 0\nvm.max_map_count = 262144\n"},
		{"sysctl slash key and duplicate replaced once", func(b []byte) []byte { return editSysctl(b, map[string]string{"kernel.numa_balancing": "0"}) },
			"# mine\n-kernel/numa_balancing=1\nvm.swappiness = 1\nkernel.numa_balancing = 1\n", "# mine\nkernel.numa_balancing = 0\nvm.swappiness = 1\n"},
		{"sysctl of several values, whitespace as sysctl -a prints it", func(b []byte) []byte {
			return editSysctl(b, map[string]string{"net.ipv4.tcp_rmem": "4096\t87380\t6291456"})
		}, "", hdr + "net.ipv4.tcp_rmem = 4096 87380 6291456\n"},
		{"limits both types replace soft and hard", func(b []byte) []byte {
			return editLimits(b, map[string]string{"domain": "*", "type": "-", "item": "memlock", "value": "unlimited"})
		}, "* soft memlock 64\n* hard nofile 1024\n* hard memlock 64\n", "*    -    memlock    unlimited\n* hard nofile 1024\n"},
		{"limits soft from a dash line keeps hard", func(b []byte) []byte {
			return editLimits(b, map[string]string{"domain": "*", "type": "soft", "item": "stack", "value": "8192"})
		}, "* - stack unlimited\n", "*    soft    stack    8192\n*    hard    stack    unlimited\n"},
		{"logind into section", func(b []byte) []byte { return editLogind(b, map[string]string{"RemoveIPC": "no"}) },
			"[Login]\nKillUserProcesses=no\n\n[Other]\nX=1\n", "[Login]\nKillUserProcesses=no\nRemoveIPC=no\n\n[Other]\nX=1\n"},
		{"logind replace", func(b []byte) []byte { return editLogind(b, map[string]string{"RemoveIPC": "no"}) },
			"[Login]\nRemoveIPC=yes\nRemoveIPC=yes\n", "[Login]\nRemoveIPC=no\n"},
		{"logind new", func(b []byte) []byte { return editLogind(b, map[string]string{"RemoveIPC": "no"}) },
			"", hdr + "[Login]\nRemoveIPC=no\n"},
		{"service limits new", func(b []byte) []byte { return editServiceLimits(b, map[string]string{"LimitMEMLOCK": "infinity"}) },
			"", hdr + "[Service]\nLimitMEMLOCK=infinity\n"},
		{"service limits replaced in [Service] only", func(b []byte) []byte { return editServiceLimits(b, map[string]string{"LimitMEMLOCK": "infinity"}) },
			"[Unit]\nLimitMEMLOCK=1\n[Service]\nLimitMEMLOCK=64M\nLimitNOFILE=1048576\n", "[Unit]\nLimitMEMLOCK=1\n[Service]\nLimitMEMLOCK=infinity\nLimitNOFILE=1048576\n"},
		{"modules added once", func(b []byte) []byte { return editList(b, []string{"nvidia_peermem", "nvidia_peermem"}) },
			"nvidia_peermem\n", "nvidia_peermem\n"},
		{"blacklist", func(b []byte) []byte { return editList(b, []string{"blacklist nv_peer_mem"}) },
			"", hdr + "blacklist nv_peer_mem\n"},
		{"nccl env", func(b []byte) []byte { return editNCCLEnv(b, map[string]string{"NCCL_IB_DISABLE": "0"}) },
			"export NCCL_IB_HCA=mlx5\nexport NCCL_IB_DISABLE=1\n", "export NCCL_IB_HCA=mlx5\nexport NCCL_IB_DISABLE=0\n"},
		{"grub new", func(b []byte) []byte { out, _ := editGrub(b, map[string]string{"hugetlb_cma": "0"}); return out },
			"", hdr + `GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=0"` + "\n"},
		{"grub param replaced in place, others kept", func(b []byte) []byte {
			out, _ := editGrub(b, map[string]string{"hugetlb_cma": "0", "iommu": "pt"})
			return out
		}, "# ours\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=2G quiet\"\n",
			"# ours\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugetlb_cma=0 quiet iommu=pt\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(tc.edit([]byte(tc.old)))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A GRUB drop-in that sets the command line some other way is not edited:
// appending to it could be overridden by what it does.
func TestEditGrubRefusesForeignForm(t *testing.T) {
	_, err := editGrub([]byte("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet hugetlb_cma=2G\"\n"), map[string]string{"hugetlb_cma": "0"})
	if err == nil || !strings.Contains(err.Error(), "does not edit") {
		t.Errorf("err = %v", err)
	}
}

func TestParseFix(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  map[string]any
		want string // "" for ok, else part of the error
	}{
		{"boot param", map[string]any{"kind": "boot-param", "set": map[string]any{"hugetlb_cma": "0"}}, ""},
		{"no fix", nil, "attaches no fix"},
		{"unknown kind", map[string]any{"kind": "grub"}, "unknown kind"},
		{"unknown key", map[string]any{"kind": "sysctl", "set": map[string]any{"a.b": "1"}, "add": 1}, `unknown key "add"`},
		{"number value", map[string]any{"kind": "sysctl", "set": map[string]any{"a.b": 1.0}}, "want a string"},
		{"shell in a value", map[string]any{"kind": "boot-param", "set": map[string]any{"x": "$(reboot)"}}, "a value must"},
		{"quote in a value", map[string]any{"kind": "boot-param", "set": map[string]any{"x": `a" y="b`}}, "a value must"},
		{"newline in a key", map[string]any{"kind": "sysctl", "set": map[string]any{"a\nb": "1"}}, "not a valid name"},
		{"nccl name", map[string]any{"kind": "nccl-env", "set": map[string]any{"PATH": "/tmp"}}, "not a valid name"},
		{"limits", map[string]any{"kind": "limits", "set": map[string]any{"domain": "@hpc", "item": "memlock", "value": "unlimited"}}, ""},
		{"limits bad type", map[string]any{"kind": "limits", "set": map[string]any{"type": "both", "item": "memlock", "value": "1"}}, "want -, soft or hard"},
		{"modules", map[string]any{"kind": "modules", "load": []any{"nvidia_peermem"}, "blacklist": []any{"nv_peer_mem"}}, ""},
		{"empty", map[string]any{"kind": "logind"}, "nothing to set"},
		{"sysctl of several values", map[string]any{"kind": "sysctl", "set": map[string]any{"net.ipv4.tcp_rmem": "4096\t87380 6291456"}}, ""},
		{"space in a boot param", map[string]any{"kind": "boot-param", "set": map[string]any{"x": "a b"}}, "a value must"},
		{"service limits", map[string]any{"kind": "service-limits", "unit": "slurmd.service", "set": map[string]any{"LimitMEMLOCK": "infinity"}}, ""},
		{"service template instance", map[string]any{"kind": "service-limits", "unit": "getty@tty1.service", "set": map[string]any{"LimitNOFILE": "65536"}}, ""},
		{"service unit a path", map[string]any{"kind": "service-limits", "unit": "../../etc/passwd.service", "set": map[string]any{"LimitMEMLOCK": "infinity"}}, "want a service unit name"},
		{"service unit not a service", map[string]any{"kind": "service-limits", "unit": "slurmd.socket", "set": map[string]any{"LimitMEMLOCK": "infinity"}}, "want a service unit name"},
		{"service unit missing", map[string]any{"kind": "service-limits", "set": map[string]any{"LimitMEMLOCK": "infinity"}}, "want a service unit name"},
		{"service directive not a limit", map[string]any{"kind": "service-limits", "unit": "slurmd.service", "set": map[string]any{"ExecStart": "/bin/sh"}}, "not a Limit*= directive"},
		{"service value with a newline", map[string]any{"kind": "service-limits", "unit": "slurmd.service", "set": map[string]any{"LimitMEMLOCK": "infinity\nExecStartPre=/bin/sh"}}, "a value must"},
		{"service nothing", map[string]any{"kind": "service-limits", "unit": "slurmd.service"}, "nothing to set"},
		{"sysctl words with shell", map[string]any{"kind": "sysctl", "set": map[string]any{"a.b": "1 $(reboot)"}}, "a value must"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFix(tc.raw)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMergeFixes(t *testing.T) {
	soft := Fix{Kind: KindLimits, Set: map[string]string{"domain": "*", "type": "soft", "item": "memlock", "value": "unlimited"}}
	hard := Fix{Kind: KindLimits, Set: map[string]string{"domain": "*", "type": "hard", "item": "memlock", "value": "unlimited"}}
	got, err := soft.merge(hard)
	if err != nil || got.Set["type"] != "-" {
		t.Errorf("soft+hard = %+v, %v; want type -", got, err)
	}
	a := Fix{Kind: KindSysctl, Set: map[string]string{"vm.max_map_count": "262144"}}
	b := Fix{Kind: KindSysctl, Set: map[string]string{"vm.max_map_count": "1048576"}}
	if _, err := a.merge(b); err == nil || !strings.Contains(err.Error(), "vm.max_map_count=262144 and vm.max_map_count=1048576") {
		t.Errorf("conflict: %v", err)
	}
}

// Service limits of two units join; one unit asked for two values of a
// limit cannot.
func TestMergeServiceLimits(t *testing.T) {
	fix := func(unit, v string) Fix {
		f, err := ParseFix(map[string]any{"kind": "service-limits", "unit": unit, "set": map[string]any{"LimitMEMLOCK": v}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	got, err := fix("slurmd.service", "infinity").merge(fix("containerd.service", "infinity"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{"slurmd.service": {"LimitMEMLOCK": "infinity"}, "containerd.service": {"LimitMEMLOCK": "infinity"}}
	if diff := cmp.Diff(want, got.Services); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if s := got.String(); s != "service-limits: containerd.service: LimitMEMLOCK=infinity; slurmd.service: LimitMEMLOCK=infinity" {
		t.Errorf("String() = %q", s)
	}
	if _, err := fix("slurmd.service", "infinity").merge(fix("slurmd.service", "8G")); err == nil || !strings.Contains(err.Error(), "LimitMEMLOCK=infinity and LimitMEMLOCK=8G") {
		t.Errorf("conflict: %v", err)
	}
}

func TestGroupFixSaysWhenSomeFindingsHaveNoFix(t *testing.T) {
	withFix := policies.Finding{Rule: "hugetlb-cma-on-gpu", Host: "a", Fix: map[string]any{"kind": "boot-param", "set": map[string]any{"hugetlb_cma": "0"}}}
	without := policies.Finding{Rule: "hugetlb-cma-on-gpu", Host: "b"}
	if _, err := groupFix([]policies.Finding{withFix, without}); err == nil || !strings.Contains(err.Error(), "1 of 2 findings carry no fix") {
		t.Errorf("mixed group: %v", err)
	}
	if _, err := groupFix([]policies.Finding{without}); !errors.Is(err, ErrNoFix) {
		t.Errorf("no fix at all: %v, want ErrNoFix", err)
	}
	if fix, err := groupFix([]policies.Finding{withFix, withFix}); err != nil || fix.Set["hugetlb_cma"] != "0" {
		t.Errorf("all with fixes: %+v, %v", fix, err)
	}
}
