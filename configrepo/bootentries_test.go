package configrepo

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/policies"
)

// blsGrubenv is a RHEL 8 GRUB environment block: 1024 bytes, "#" padded.
func blsGrubenv(lines ...string) string {
	b := "# GRUB Environment Block\n" + strings.Join(lines, "\n") + "\n"
	return b + strings.Repeat("#", 1024-len(b))
}

const blsEntryPath = "layers/base/boot/loader/entries/0a1b2c3d4e5f40718293a4b5c6d7e8f9-4.18.0-513.5.1.el8_9.x86_64.conf"

func blsEntry(options string) string {
	return "title Red Hat Enterprise Linux (4.18.0-513.5.1.el8_9.x86_64) 8.9 (Ootpa)\n" +
		"version 4.18.0-513.5.1.el8_9.x86_64\n" +
		"linux /vmlinuz-4.18.0-513.5.1.el8_9.x86_64\n" +
		"options " + options + "\n" +
		"grub_class kernel\n"
}

// TestGateRendersBootEntriesAndGrubenv: a config repo that carries a
// RHEL-family fleet's BLS entries and grubenv in a layer is audited from
// them like any other file, with the layer's repo path as provenance.
func TestGateRendersBootEntriesAndGrubenv(t *testing.T) {
	r := baseRepo(t)
	r.Write("layers/base/etc/default/grub", "GRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb quiet\"\nGRUB_ENABLE_BLSCFG=true\n")
	r.Write("layers/base/boot/grub2/grubenv", blsGrubenv(
		"saved_entry=0a1b2c3d4e5f40718293a4b5c6d7e8f9-4.18.0-513.5.1.el8_9.x86_64",
		"kernelopts=root=/dev/mapper/rhel-root ro crashkernel=auto rhgb quiet "))
	r.Write(blsEntryPath, blsEntry("$kernelopts $tuned_params"))
	base := r.Commit("RHEL 8 boot entries")

	// grubby --update-kernel=<the default kernel> --args=hugetlb_cma=6G, in
	// the shared base layer.
	r.Write(blsEntryPath, blsEntry("root=/dev/mapper/rhel-root ro crashkernel=auto rhgb quiet hugetlb_cma=6G $tuned_params"))
	head := r.Commit("grubby: hugetlb_cma for the web servers")

	res := gate(t, r, base, head)
	gpu, web := fleetResult(t, res, "gpu-training"), fleetResult(t, res, "web-serving")
	if diff := cmp.Diff([]string{"boot-entry-divergent", "hugetlb-cma-on-gpu"}, sortedRules(gpu.Introduced)); diff != "" {
		t.Fatalf("gpu-training introduced (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"boot-entry-divergent"}, sortedRules(web.Introduced)); diff != "" {
		t.Errorf("web-serving introduced (-want +got):\n%s", diff)
	}
	cma := gpu.Introduced[slices.IndexFunc(gpu.Introduced, func(f policies.Finding) bool { return f.Rule == "hugetlb-cma-on-gpu" })]
	if cma.Severity != "critical" || !slices.ContainsFunc(cma.Evidence, func(e policies.Evidence) bool {
		return e.Fact == "boot.configured.params.hugetlb_cma" && e.Source == blsEntryPath+":4"
	}) {
		t.Errorf("hugetlb-cma-on-gpu %s cites %+v, want critical at %s:4", cma.Severity, cma.Evidence, blsEntryPath)
	}
	if !slices.Equal(gpu.Changed, []string{blsEntryPath}) {
		t.Errorf("changed %v, want the entry", gpu.Changed)
	}

	// The same parameter added to kernelopts in grubenv instead (grubby
	// --update-kernel=ALL on RHEL 8) is cited at the grubenv line.
	r.Write(blsEntryPath, blsEntry("$kernelopts $tuned_params"))
	r.Write("layers/base/boot/grub2/grubenv", blsGrubenv(
		"saved_entry=0a1b2c3d4e5f40718293a4b5c6d7e8f9-4.18.0-513.5.1.el8_9.x86_64",
		"kernelopts=root=/dev/mapper/rhel-root ro crashkernel=auto rhgb quiet hugetlb_cma=6G "))
	env := r.Commit("grubby --update-kernel=ALL")
	gpu = fleetResult(t, gate(t, r, base, env), "gpu-training")
	i := slices.IndexFunc(gpu.Introduced, func(f policies.Finding) bool { return f.Rule == "hugetlb-cma-on-gpu" })
	if i < 0 {
		t.Fatalf("introduced %v, want hugetlb-cma-on-gpu", rules(gpu.Introduced))
	}
	if !slices.ContainsFunc(gpu.Introduced[i].Evidence, func(e policies.Evidence) bool {
		return e.Source == "layers/base/boot/grub2/grubenv:3"
	}) {
		t.Errorf("cites %+v, want layers/base/boot/grub2/grubenv:3", gpu.Introduced[i].Evidence)
	}
}

func sortedRules(fs []policies.Finding) []string {
	out := rules(fs)
	slices.Sort(out)
	return out
}
