package remediate

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/configrepo"
)

const (
	ruleDualPeermem = "peermem-dual-modules"
	modprobeFixPath = "layers/gpu/etc/modprobe.d/99-fleetaudit.conf"
)

// peermemRepo is cmaRepo whose GPU layer lists both peer-memory modules in
// modules-load.d; the fleet's baseline has nvidia_peermem loaded and
// nv_peer_mem not.
func peermemRepo(t *testing.T) *gitRepo {
	t.Helper()
	r := cmaRepo(t, twoFleets)
	r.Write("layers/gpu/etc/modules-load.d/peermem.conf", "nv_peer_mem\nnvidia-peermem\n")
	r.Commit("both peer-memory modules at boot")
	return r
}

// The modules fix is proven by the gate: the drop-in remediate writes to
// modprobe.d blocks nv_peer_mem, the collectors read it, and the rule no
// longer counts nv_peer_mem as loading at boot. Before modprobe.d was
// collected, the fix changed no fact and was refused as unproven.
func TestPlanModulesBlacklistProven(t *testing.T) {
	r := peermemRepo(t)
	g := onlyGroup(t, plan(t, r, Options{Rule: ruleDualPeermem}))
	prop := proposal(t, g)
	if diff := cmp.Diff([]string{modprobeFixPath}, g.Placement.Paths()); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	if got := string(prop.Files[0].Content); !strings.Contains(got, "\nblacklist nv_peer_mem\ninstall nv_peer_mem /bin/false\n") {
		t.Errorf("%s does not blacklist nv_peer_mem and block loading it by name:\n%s", modprobeFixPath, got)
	}
	res := applyAndGate(t, r, prop)
	gpu := fleetResult(t, res, "gpu-training")
	if got := rulesOf(gpu.Resolved); !slices.Contains(got, ruleDualPeermem) {
		t.Errorf("applied: gpu-training resolved %v", got)
	}
	if len(gpu.Introduced) != 0 {
		t.Errorf("applied: gpu-training introduced %v", rulesOf(gpu.Introduced))
	}
}

// A config repo whose GPU layer gains etc/modprobe.d/99-fleetaudit.conf no
// longer shows the finding when the file blocks nv_peer_mem (either line
// alone, or both as the remediation advises), and still shows it when the
// file only sets options or blocks another module.
func TestGateModprobeDropinResolvesDualModules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		content  string
		resolved bool
	}{
		{"blacklist", "blacklist nv_peer_mem\n", true},
		{"install false", "install nv-peer-mem /bin/false\n", true},
		{"blacklist and install", "# Written by fleetaudit\nblacklist nv_peer_mem\ninstall nv_peer_mem /bin/false\n", true},
		{"options only", "options nv_peer_mem debug=1\n", false},
		{"install that loads", "install nv_peer_mem /sbin/modprobe --ignore-install nv_peer_mem\n", false},
		{"another module", "blacklist nouveau\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := peermemRepo(t)
			r.Write(modprobeFixPath, tc.content)
			res, err := configrepo.Run(context.Background(), configrepo.Options{Repo: r.Dir, Base: "HEAD", Head: configrepo.WorkTree, Fleets: testFleets(t)})
			if err != nil {
				t.Fatal(err)
			}
			gpu := fleetResult(t, res, "gpu-training")
			if got := slices.Contains(rulesOf(gpu.Resolved), ruleDualPeermem); got != tc.resolved {
				t.Errorf("resolved %v, want %s resolved: %v", rulesOf(gpu.Resolved), ruleDualPeermem, tc.resolved)
			}
			if got := slices.Contains(rulesOf(gpu.Unchanged), ruleDualPeermem); got == tc.resolved {
				t.Errorf("unchanged %v, want %s there: %v", rulesOf(gpu.Unchanged), ruleDualPeermem, !tc.resolved)
			}
			if len(gpu.Introduced) != 0 {
				t.Errorf("introduced %v", rulesOf(gpu.Introduced))
			}
		})
	}
}
