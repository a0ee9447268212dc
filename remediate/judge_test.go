package remediate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

// judge fails a proof for each way a fix can be wrong; the plan refuses
// the fix on any FAIL line.
func TestJudge(t *testing.T) {
	cma := policies.Finding{Rule: ruleCMA, Severity: "critical", Message: "hugetlb_cma=6G",
		Evidence: []policies.Evidence{{Fact: "boot.configured.params.hugetlb_cma", Source: "layers/base/etc/default/grub.d/60-cma.cfg:1"}}}
	other := policies.Finding{Rule: "thp-always", Severity: "medium", Message: "thp always"}
	g := &Group{Rule: ruleCMA, Fleet: "gpu-training"}
	fleet := func(name, status string, introduced, resolved, unchanged []policies.Finding) configrepo.FleetResult {
		return configrepo.FleetResult{Fleet: name, Status: status, Introduced: introduced, Resolved: resolved, Unchanged: unchanged}
	}
	for _, tc := range []struct {
		name string
		res  configrepo.Result
		want []string
	}{{
		name: "proven",
		res: configrepo.Result{Fleets: []configrepo.FleetResult{
			fleet("gpu-training", "changed", nil, []policies.Finding{cma}, nil),
			fleet("web-serving", "unchanged", nil, nil, nil),
		}},
		want: []string{"resolved in gpu-training: hugetlb-cma-on-gpu: hugetlb_cma=6G", "fleet web-serving: unchanged (the fix reaches none of its files)", "introduced in any fleet: nothing"},
	}, {
		name: "stays",
		res: configrepo.Result{Fleets: []configrepo.FleetResult{
			fleet("gpu-training", "changed", nil, nil, []policies.Finding{cma}),
		}},
		want: []string{"FAIL hugetlb-cma-on-gpu stays in fleet gpu-training: hugetlb_cma=6G (set at layers/base/etc/default/grub.d/60-cma.cfg:1): the fix is placed where it does not win, or the rule reads something the drop-in does not change", "introduced in any fleet: nothing"},
	}, {
		name: "stays, facts from the baseline",
		res: configrepo.Result{Fleets: []configrepo.FleetResult{
			fleet("gpu-training", "changed", nil, nil, []policies.Finding{{Rule: ruleCMA, Message: "m", Evidence: []policies.Evidence{
				{Fact: "boot.configured.params.hugetlb_cma", Source: "/proc/cmdline (baseline baselines/gpu.json)"}, {Fact: "rdma.devices"}}}}),
		}},
		want: []string{"FAIL hugetlb-cma-on-gpu stays in fleet gpu-training: m (set at /proc/cmdline (baseline baselines/gpu.json)): its facts come from the fleet's baseline snapshot, not from the repo's files, so no change to the repo resolves it", "introduced in any fleet: nothing"},
	}, {
		name: "introduces elsewhere",
		res: configrepo.Result{Fleets: []configrepo.FleetResult{
			fleet("gpu-training", "changed", nil, []policies.Finding{cma}, nil),
			fleet("web-serving", "changed", []policies.Finding{other}, nil, nil),
		}, Summary: configrepo.Summary{Introduced: 1}},
		want: []string{"resolved in gpu-training: hugetlb-cma-on-gpu: hugetlb_cma=6G", "FAIL introduces thp-always (medium) in fleet web-serving: thp always"},
	}, {
		name: "a fleet breaks",
		res: configrepo.Result{
			Base:   configrepo.RefInfo{Ref: "HEAD"},
			Errors: []configrepo.FleetError{{Fleet: "web-serving", Ref: "HEAD", Error: "old"}, {Fleet: "web-serving", Ref: "base + fix", Error: "old"}, {Fleet: "gpu-training", Ref: "base + fix", Error: "layer gpu: clash"}},
			Fleets: []configrepo.FleetResult{fleet("gpu-training", "error", nil, nil, nil)},
		},
		want: []string{"FAIL fleet gpu-training cannot be audited with the fix: layer gpu: clash", "FAIL hugetlb-cma-on-gpu was not found in fleet gpu-training at base, so the fix resolves nothing", "introduced in any fleet: nothing"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(&tc.res, g)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			fails := 0
			for _, l := range got {
				if strings.HasPrefix(l, "FAIL ") {
					fails++
				}
			}
			if (fails == 0) != (tc.name == "proven") {
				t.Errorf("%d FAIL lines", fails)
			}
		})
	}
}
