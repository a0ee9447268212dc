package fleetrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
)

// An offline image (source.image) has no running state: a rule that reads
// it is skipped (reported as not evaluated, not passed) unless it declares
// custom.image, and a finding citing nothing but running facts is withheld,
// even where a document carries running values anyway. Configuration rules
// fire as on any host.
func TestImageRunningStateNotCollected(t *testing.T) {
	live := host{Name: "live", HugetlbCMA: "6G"}.Snapshot()
	live["sysctl"].(map[string]any)["running"].(map[string]any)["kernel.numa_balancing"] = "1"

	// Running values in an image's document (not what collect writes, but
	// what an edited or foreign file may hold) still count as not collected.
	staleRunning := host{Name: "image-running", HugetlbCMA: "6G"}.Snapshot()
	staleRunning["source"] = map[string]any{"kind": "local", "root": "/img", "image": true}
	staleRunning["sysctl"].(map[string]any)["running"].(map[string]any)["kernel.numa_balancing"] = "1"
	staleRunning["boot"].(map[string]any)["configured"] = map[string]any{"loader": "grub", "present": true, "cmdline": "iommu=pt", "params": map[string]any{"iommu": "pt"}}

	// As collect writes an image: running state left out.
	image := host{Name: "image", HugetlbCMA: "6G"}.Snapshot()
	image["source"] = map[string]any{"kind": "local", "root": "/img", "image": true}
	delete(image["boot"].(map[string]any), "running")
	delete(image["sysctl"].(map[string]any), "running")
	for _, s := range []string{"kernel", "memory", "rdma"} {
		delete(image, s)
	}
	image["nvidia"] = map[string]any{"nvml_versions": []any{}, "fabric_manager": ""}
	image["modules"] = map[string]any{"configured": map[string]any{}}
	image["limits"] = map[string]any{
		"entries":   []any{map[string]any{"domain": "*", "type": "-", "item": "memlock", "value": "65536", "source": "/etc/security/limits.d/90-memlock.conf:1"}},
		"effective": map[string]any{"*": map[string]any{"memlock": map[string]any{"soft": "65536", "hard": "65536"}}},
	}
	image["sources"].(map[string]any)["limits.effective.*.memlock.soft"] = "/etc/security/limits.d/90-memlock.conf:1"

	dir := t.TempDir()
	files := []string{
		writeJSON(t, dir, "live.json", live),
		writeJSON(t, dir, "image-running.json", staleRunning),
		writeJSON(t, dir, "image.json", image),
	}
	rep := runFiles(t, newEngine(t, policies.Options{Fleets: gpuFleets()}), files, RunOptions{})
	rules := func(h string) []string {
		var out []string
		for _, f := range findingsOf(rep, h) {
			id, _, _ := strings.Cut(f, ":")
			out = append(out, id)
		}
		return out
	}
	skipped := map[string][]string{}
	for _, hr := range rep.Hosts {
		skipped[hr.Host] = hr.Skipped
		if hr.Image != (hr.Host != "live") {
			t.Errorf("%s: HostRun.Image %v", hr.Host, hr.Image)
		}
	}
	for _, id := range []string{"hugetlb-cma-on-gpu", "numa-balancing-enabled"} {
		if !slices.Contains(rules("live"), id) {
			t.Errorf("live: %s did not fire: %q", id, findingsOf(rep, "live"))
		}
	}
	if slices.Contains(skipped["live"], "numa-balancing-enabled") {
		t.Errorf("live: numa-balancing-enabled skipped")
	}
	for _, h := range []string{"image-running", "image"} {
		for _, id := range []string{"numa-balancing-enabled", "boot-config-pending", "sysctl-not-applied", "peermem-configured-not-loaded"} {
			if slices.Contains(rules(h), id) {
				t.Errorf("%s: %s fired on an image", h, id)
			}
			if !slices.Contains(skipped[h], id) {
				t.Errorf("%s: %s not listed as skipped: %v", h, id, skipped[h])
			}
		}
		for _, id := range []string{"hugetlb-cma-on-gpu", "memlock-too-low"} {
			if slices.Contains(skipped[h], id) {
				t.Errorf("%s: %s (custom.image) skipped", h, id)
			}
		}
	}
	// hugetlb_cma only on the running command line of an image: no finding.
	if slices.Contains(rules("image-running"), "hugetlb-cma-on-gpu") {
		t.Errorf("image-running: a finding citing only running facts: %q", findingsOf(rep, "image-running"))
	}
	var cma *policies.Finding
	for i, f := range rep.Findings {
		if f.Host == "image" && f.Rule == "hugetlb-cma-on-gpu" {
			cma = &rep.Findings[i]
		}
	}
	if cma == nil || !strings.Contains(cma.Message, "configured kernel command line") || cma.Evidence[0].Fact != "boot.configured.params.hugetlb_cma" || cma.Evidence[0].Source != "/etc/default/grub.d/60-hugetlb.cfg:3" {
		t.Errorf("image: hugetlb-cma-on-gpu on the configured command line: %+v", cma)
	}
	if !slices.Contains(rules("image"), "memlock-too-low") {
		t.Errorf("image: memlock-too-low did not fire: %q", findingsOf(rep, "image"))
	}
}
