package remediate

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

const (
	ruleServiceMemlock = "service-memlock-too-low"
	slurmdUnit         = "[Unit]\nDescription=Slurm node daemon\n\n[Service]\nType=notify\nExecStart=/usr/sbin/slurmd --systemd\nLimitNOFILE=131072\n"
	slurmdFixPath      = "layers/gpu/etc/systemd/system/slurmd.service.d/zz-fleetaudit.conf"
)

// service-memlock-too-low in a repo that ships the site's slurmd unit:
// the fix is a drop-in of the unit's own in the GPU fleet's layer, named
// to sort after the override.conf "systemctl edit" writes; the collectors
// read it last, the gate proves it, and the diff applies with git apply.
func TestPlanServiceLimitsDropin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{{
		name: "override.conf sets 64M",
		files: map[string]string{
			"layers/gpu/etc/systemd/system/slurmd.service":                 slurmdUnit,
			"layers/gpu/etc/systemd/system/slurmd.service.d/override.conf": "[Service]\nLimitMEMLOCK=64M\n",
		},
	}, {
		name:  "no LimitMEMLOCK anywhere: systemd's default",
		files: map[string]string{"layers/gpu/usr/lib/systemd/system/slurmd.service": slurmdUnit},
	}, {
		name: "DefaultLimitMEMLOCK in system.conf.d",
		files: map[string]string{
			"layers/gpu/etc/systemd/system/slurmd.service":               slurmdUnit,
			"layers/gpu/etc/systemd/system.conf.d/60-limits.conf":        "[Manager]\nDefaultLimitMEMLOCK=8M\n",
			"layers/gpu/etc/systemd/system/slurmd.service.d/10-gpu.conf": "[Service]\nLimitNOFILE=1048576\n",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := cmaRepo(t, twoFleets)
			for name, content := range tc.files {
				r.Write(name, content)
			}
			r.Commit(tc.name)
			g := onlyGroup(t, plan(t, r, Options{Rule: ruleServiceMemlock}))
			prop := proposal(t, g)
			if diff := cmp.Diff([]string{slurmdFixPath}, g.Placement.Paths()); diff != "" {
				t.Fatalf("files (-want +got):\n%s", diff)
			}
			if got := string(prop.Files[0].Content); !strings.HasPrefix(got, "# Written by fleetaudit") || !strings.HasSuffix(got, "\n[Service]\nLimitMEMLOCK=infinity\n") {
				t.Errorf("%s:\n%s", slurmdFixPath, got)
			}
			if !strings.Contains(prop.Body, "systemctl daemon-reload, then systemctl restart slurmd.service") {
				t.Errorf("body lacks the restart:\n%s", prop.Body)
			}
			res := applyAndGate(t, r, prop)
			gpu := fleetResult(t, res, "gpu-training")
			if got := rulesOf(gpu.Resolved); !slices.Contains(got, ruleServiceMemlock) {
				t.Errorf("applied: gpu-training resolved %v", got)
			}
			if res.Summary.Introduced != 0 {
				t.Errorf("applied: introduced %d", res.Summary.Introduced)
			}
		})
	}
}

// A drop-in fleetaudit wrote before is edited in place, and a later one
// that wins over it (a name sorting after zz-fleetaudit.conf) makes the
// fix unprovable: refused with the gate's reason, not proposed.
func TestPlanServiceLimitsExistingAndOverridden(t *testing.T) {
	r := cmaRepo(t, twoFleets)
	r.Write("layers/gpu/etc/systemd/system/slurmd.service", slurmdUnit)
	r.Write(slurmdFixPath, "# ours\n[Service]\nLimitNOFILE=1048576\nLimitMEMLOCK=64M\n")
	r.Commit("slurmd")
	prop := proposal(t, onlyGroup(t, plan(t, r, Options{Rule: ruleServiceMemlock})))
	if got := string(prop.Files[0].Content); got != "# ours\n[Service]\nLimitNOFILE=1048576\nLimitMEMLOCK=infinity\n" {
		t.Errorf("%s:\n%s", slurmdFixPath, got)
	}

	r.Write("layers/gpu/etc/systemd/system/slurmd.service.d/zzz-late.conf", "[Service]\nLimitMEMLOCK=64M\n")
	r.Commit("a later drop-in")
	g := onlyGroup(t, plan(t, r, Options{Rule: ruleServiceMemlock}))
	if g.Proposal != nil || !strings.Contains(g.Refused, "the gate does not prove the fix") || !strings.Contains(g.Refused, "zzz-late.conf") {
		t.Fatalf("refused %q (proposal %v), want the gate's refusal naming zzz-late.conf", g.Refused, g.Proposal != nil)
	}
}

// Hosts report the finding, but the repo holds no slurmd unit (the
// package installs it): the gate cannot see the service, so no change to
// the repo is proven, and the group is refused rather than guessed at.
func TestPlanServiceLimitsFromAuditWithoutUnitRefused(t *testing.T) {
	r := cmaRepo(t, twoFleets)
	audit := []policies.Finding{{
		Rule: ruleServiceMemlock, Fleet: "gpu-training", Host: "gpu-a-001", Severity: "high",
		Fix:      map[string]any{"kind": "service-limits", "unit": "slurmd.service", "set": map[string]any{"LimitMEMLOCK": "infinity"}},
		Evidence: []policies.Evidence{{Fact: "services.units.slurmd.service.memlock_default", Source: "default: no LimitMEMLOCK="}},
	}}
	g := onlyGroup(t, plan(t, r, Options{Audit: audit}))
	if g.Proposal != nil || !strings.Contains(g.Refused, "does not show service-memlock-too-low") {
		t.Fatalf("refused %q (proposal %v)", g.Refused, g.Proposal != nil)
	}
}

// The gate reads a drop-in in the repo the way systemd does: one named to
// sort after the unit's others wins; one that sorts before them does not.
func TestGateServiceDropinOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string
		resolved bool
	}{
		{"zz-fleetaudit.conf after override.conf", slurmdFixPath, true},
		{"99-fleetaudit.conf before override.conf", "layers/gpu/etc/systemd/system/slurmd.service.d/99-fleetaudit.conf", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cmaRepo(t, twoFleets)
			r.Write("layers/gpu/etc/systemd/system/slurmd.service", slurmdUnit)
			r.Write("layers/gpu/etc/systemd/system/slurmd.service.d/override.conf", "[Service]\nLimitMEMLOCK=64M\n")
			r.Commit("slurmd")
			r.Write(tc.file, "[Service]\nLimitMEMLOCK=infinity\n")
			res, err := configrepo.Run(context.Background(), configrepo.Options{Repo: r.Dir, Base: "HEAD", Head: configrepo.WorkTree, Fleets: testFleets(t)})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(rulesOf(fleetResult(t, res, "gpu-training").Resolved), ruleServiceMemlock); got != tc.resolved {
				t.Errorf("resolved: %v, want %v", got, tc.resolved)
			}
		})
	}
}
