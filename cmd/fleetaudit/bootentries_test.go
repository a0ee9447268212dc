package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
)

// TestAuditGrubbyPendingHugetlbCMA audits the Rocky 9 fixture root, where
// grubby --update-kernel=<default kernel> --args=hugetlb_cma=4G edited the
// default boot entry only and the host has not rebooted: the pending CMA
// reservation is critical and cited at the entry's options line, the
// pending change and the entry's divergence from /etc/default/grub are
// reported too.
func TestAuditGrubbyPendingHugetlbCMA(t *testing.T) {
	const entry = "/boot/loader/entries/e4b5a6c7d8e94f0a8b1c2d3e4f5a6b7c-5.14.0-427.13.1.el9_4.x86_64.conf"
	r := runCLI(t, nil, "audit", "--root", "../../testdata/hosts/rocky9-bls", "--format", "json", "--fail-on", "critical")
	if r.code != exitFindings {
		t.Fatalf("exit %d, want %d (a critical finding)\n%s", r.code, exitFindings, r.stderr)
	}
	findings := reportFindings(t, r.stdout)
	byRule := map[string]policies.Finding{}
	for _, f := range findings {
		byRule[f.Rule] = f
	}
	cma, ok := byRule["hugetlb-cma-on-gpu"]
	if !ok || cma.Severity != "critical" || cma.Host != "gpu-k-001" || cma.Fleet != "gpu-training" {
		t.Fatalf("hugetlb-cma-on-gpu = %+v, want critical on gpu-k-001 in gpu-training", cma)
	}
	if !slices.ContainsFunc(cma.Evidence, func(e policies.Evidence) bool {
		return e.Fact == "boot.configured.params.hugetlb_cma" && e.Value == "4G" && e.Source == entry+":5"
	}) {
		t.Errorf("evidence %+v, want boot.configured.params.hugetlb_cma=4G at %s:5", cma.Evidence, entry)
	}
	if slices.ContainsFunc(cma.Evidence, func(e policies.Evidence) bool { return strings.HasPrefix(e.Fact, "boot.running.") }) {
		t.Errorf("evidence %+v cites the running command line, which does not carry it", cma.Evidence)
	}
	if f := byRule["boot-config-pending"]; !strings.Contains(f.Message, "(grub-bls loader): +hugetlb_cma") {
		t.Errorf("boot-config-pending = %q", f.Message)
	}
	div, ok := byRule["boot-entry-divergent"]
	if !ok || div.Severity != "medium" || !strings.Contains(div.Message, "hugetlb_cma=4G only in the entry") {
		t.Fatalf("boot-entry-divergent = %+v", div)
	}
	if div.Evidence[0].Source != entry+":5" || div.Evidence[len(div.Evidence)-1].Source != "/boot/grub2/grubenv:2" {
		t.Errorf("boot-entry-divergent evidence %+v, want the entry line first and saved_entry's grubenv line last", div.Evidence)
	}
}

// TestAuditBootEntryRootsQuiet: on the RHEL 8 root the command line comes
// from $kernelopts and $tuned_params in grubenv and matches both the
// running one and /etc/default/grub (tuned's params aside); on Amazon Linux
// 2023 a newer kernel's entry differs from the running one only per boot.
// No boot rule fires on either.
func TestAuditBootEntryRootsQuiet(t *testing.T) {
	r := runCLI(t, nil, "audit", "--root", "../../testdata/hosts/rhel8-bls", "--root", "../../testdata/hosts/al2023-bls", "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	findings := reportFindings(t, r.stdout)
	for _, f := range findings {
		if strings.HasPrefix(f.Rule, "boot-") || f.Rule == "hugetlb-cma-on-gpu" || f.Rule == "collection-error" {
			t.Errorf("%s on %s: %s", f.Rule, f.Host, f.Message)
		}
	}
}

// TestAuditMitigationsOffFromBootEntry: mitigations-off reads the configured
// command line without knowing it came from a boot entry. The Amazon Linux
// 2023 root with "grubby --update-kernel=<newest> --args=mitigations=off":
// the web server's next boot (the first, newest entry) disables them.
func TestAuditMitigationsOffFromBootEntry(t *testing.T) {
	root := filepath.Join(t.TempDir(), "al2023")
	if err := os.CopyFS(root, os.DirFS("../../testdata/hosts/al2023-bls")); err != nil {
		t.Fatal(err)
	}
	entry := "/boot/loader/entries/ec2a7f3b9c1d4e5f8a6b7c8d9e0f1a2b-6.1.119-129.201.amzn2023.x86_64.conf"
	data, err := os.ReadFile(filepath.Join(root, entry))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), " quiet\n", " quiet mitigations=off\n", 1)
	if edited == string(data) {
		t.Fatal("the fixture entry has no options line ending in quiet")
	}
	if err := os.WriteFile(filepath.Join(root, entry), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "audit", "--root", root, "--format", "json", "--fail-on", "none")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	findings := reportFindings(t, r.stdout)
	i := slices.IndexFunc(findings, func(f policies.Finding) bool { return f.Rule == "mitigations-off" })
	if i < 0 {
		t.Fatalf("no mitigations-off in %+v", findings)
	}
	f := findings[i]
	if f.Fleet != "web-serving" || len(f.Evidence) != 1 || f.Evidence[0].Fact != "boot.configured.params.mitigations" || f.Evidence[0].Source != entry+":5" {
		t.Errorf("mitigations-off in %s cites %+v, want boot.configured.params.mitigations at %s:5", f.Fleet, f.Evidence, entry)
	}
}
