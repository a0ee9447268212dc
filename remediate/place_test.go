package remediate

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fleetaudit/fleetaudit/configrepo"
)

// Fixes Place refuses before touching any file, each with its reason.
func TestPlaceRefuses(t *testing.T) {
	m, err := configrepo.ParseManifest([]byte("fleets:\n  gpu-training: {layers: [base, gpu]}\n  web-serving: {layers: [base, web]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	co := &configrepo.Checkout{Files: fstest.MapFS{}, Refused: map[string]string{"layers/gpu/etc/sysctl.d": "symlink to \"/etc\": layers must hold regular files"}}
	for _, tc := range []struct {
		name string
		fix  Fix
		want string
	}{
		{"pod, the fleet has no manifests", Fix{Kind: KindPod, Pods: []PodChange{{File: "k8s/gpu-training/job.yaml", Line: 3, Container: "c", AddCapabilities: []string{"IPC_LOCK"}}}}, "fleet gpu-training has no manifests directory"},
		{"remove a boot param", Fix{Kind: KindBootParam, Remove: []string{"cma"}}, "cannot take a parameter off the command line"},
		{"under a symlink", Fix{Kind: KindSysctl, Set: map[string]string{"vm.max_map_count": "262144"}}, "layers/gpu/etc/sysctl.d/99-fleetaudit.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Place(co, m, "gpu-training", []string{"gpu-training"}, tc.fix)
			var r *Refusal
			if p != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Place = %+v, %v; want a refusal with %q", p, err, tc.want)
			}
			if !errors.As(err, &r) {
				t.Errorf("%T is not a *Refusal", err)
			}
		})
	}
}
