package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
)

// TestAuditSLESNode audits the SLES 15 SP5 fixture root
// (testdata/hosts/README.md) and expects the findings the rules' documented
// conditions give on it, and no others:
//   - hugetlb-cma-on-gpu, high: hugetlb_cma=4G, which YaST writes into
//     GRUB_CMDLINE_LINUX_DEFAULT, is on the configured and the running
//     command line of a GPU host; high, not critical, since the host has no
//     RDMA device.
//   - removeipc-enabled, high: logind.conf leaves RemoveIPC unset and
//     SUSE's systemd keeps upstream's default, yes.
//   - sysctl-invalid, medium: aaa_base's 50-default.conf sets
//     dev.cdrom.autoclose, which exists only while the cdrom module is
//     loaded (the rule names "a module not loaded").
//   - max-map-count-low and numa-balancing-enabled, low: the kernel's
//     defaults (65530, 1), which nothing on the host changes.
//
// No collection-error: suse-module-tools' allow_unsupported_modules is a
// command SUSE's kmod reads.
func TestAuditSLESNode(t *testing.T) {
	r := runCLI(t, nil, "audit", "--root", "../../testdata/hosts/sles15-node", "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	findings := reportFindings(t, r.stdout)
	var got []string
	for _, f := range findings {
		if f.Host != "gpu-s-001" || f.Fleet != "gpu-training" {
			t.Errorf("%s on %s in %s", f.Rule, f.Host, f.Fleet)
		}
		got = append(got, f.Severity+" "+f.Rule)
	}
	slices.Sort(got)
	want := []string{
		"high hugetlb-cma-on-gpu",
		"high removeipc-enabled",
		"low max-map-count-low",
		"low numa-balancing-enabled",
		"medium sysctl-invalid",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cites := func(rule, fact, source string) {
		t.Helper()
		i := slices.IndexFunc(findings, func(f policies.Finding) bool { return f.Rule == rule })
		if !slices.ContainsFunc(findings[i].Evidence, func(e policies.Evidence) bool { return e.Fact == fact && e.Source == source }) {
			t.Errorf("%s evidence %s, want %s from %s", rule, fmt.Sprint(findings[i].Evidence), fact, source)
		}
	}
	cites("hugetlb-cma-on-gpu", "boot.configured.params.hugetlb_cma", "/etc/default/grub:11")
	cites("hugetlb-cma-on-gpu", "boot.running.params.hugetlb_cma", "/proc/cmdline")
	cites("sysctl-invalid", "sysctl.configured.dev.cdrom.autoclose", "/usr/lib/sysctl.d/50-default.conf:47")
}
