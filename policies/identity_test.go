package policies

import (
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

func TestFleetRules(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	gpu := e.FleetRules("gpu-training")
	web := e.FleetRules("web-serving")
	none := e.FleetRules("")
	for _, id := range []string{"hugetlb-cma-on-gpu", "nccl-version-skew", CollectionErrorRule} {
		if !slices.Contains(gpu, id) {
			t.Errorf("gpu-training runs %v, want %s among them", gpu, id)
		}
	}
	if slices.Contains(web, "hugetlb-cma-on-gpu") || !slices.Contains(web, CollectionErrorRule) {
		t.Errorf("web-serving runs %v", web)
	}
	// The fleet of hosts that match none runs only the rules for every fleet.
	for _, id := range none {
		r, _ := e.Rule(id)
		if id != CollectionErrorRule && !slices.Contains(r.Profiles, ProfileAll) {
			t.Errorf("fleet \"\" runs %s (profiles %v)", id, r.Profiles)
		}
	}
	if !slices.IsSorted(gpu) || e.FleetRules("no-such-fleet") != nil {
		t.Errorf("unsorted or unknown fleet answered: %v", e.FleetRules("no-such-fleet"))
	}
}

func TestAbsenceKnown(t *testing.T) {
	doc := map[string]any{
		"schema": snapshot.Schema,
		"host":   "h",
		"sysctl": map[string]any{"running": map[string]any{"vm.swappiness": "10"}},
		"nvidia": map[string]any{"present": true},
		"errors": []any{map[string]any{"collector": "nvidia", "path": "/proc/driver/nvidia/version", "reason": "permission denied"}},
	}
	for fact, want := range map[string]bool{
		"sysctl.running.kernel.numa_balancing": true,  // collected, not there
		"nvidia.driver_version":                false, // its collector failed
		"limits.effective.*.memlock.hard":      false, // section not collected
		"labels.rack":                          true,  // labels are left out when empty
		"host":                                 true,
	} {
		if got := AbsenceKnown(doc, fact); got != want {
			t.Errorf("AbsenceKnown(%s) = %v, want %v", fact, got, want)
		}
	}
	unread := map[string]any{"host": "h", "errors": []any{map[string]any{"collector": snapshot.CollectorSource, "path": "/srv/h", "reason": "no such directory"}}}
	if AbsenceKnown(unread, "sysctl.running.vm.swappiness") || Unread(unread) == "" {
		t.Errorf("an unread host: absence known %v, unread %q", AbsenceKnown(unread, "sysctl.running.vm.swappiness"), Unread(unread))
	}
}

func TestEvidenceOfFallsBackToAncestorSource(t *testing.T) {
	doc := map[string]any{
		"boot":    map[string]any{"running": map[string]any{"params": map[string]any{"iommu": "pt"}}},
		"sources": map[string]any{"boot.running": "/proc/cmdline"},
	}
	ev := EvidenceOf(doc, "boot.running.params.iommu")
	if ev.Value != "pt" || ev.Source != "/proc/cmdline" {
		t.Errorf("evidence = %+v", ev)
	}
}
