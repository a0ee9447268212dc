package fleets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
)

func TestFactsOf(t *testing.T) {
	gpuDoc := map[string]any{
		"labels": map[string]any{"zone": "a", "pool": "k8s", "odd": 3},
		"nvidia": map[string]any{"gpus": []any{map[string]any{}}},
		"rdma":   map[string]any{"devices": map[string]any{"mlx5_0": map[string]any{}}},
	}
	inv := &inventory.Host{Name: "h", Fleet: "gpu-training", Groups: []string{"gpu"}, Labels: map[string]string{"pool": "inv"}}
	tests := []struct {
		name string
		h    *inventory.Host
		doc  map[string]any
		want HostFacts
	}{
		{"neither", nil, nil, HostFacts{Name: "h", Labels: map[string]string{}}},
		{"inventory only, as the gate knows a host", inv, nil,
			HostFacts{Name: "h", Fleet: "gpu-training", Groups: []string{"gpu"}, Labels: map[string]string{"pool": "inv"}}},
		{"snapshot only", nil, gpuDoc,
			HostFacts{Name: "h", Labels: map[string]string{"zone": "a", "pool": "k8s"}, GPUs: Present, RDMA: Present}},
		{"the inventory's labels win", inv, gpuDoc,
			HostFacts{Name: "h", Fleet: "gpu-training", Groups: []string{"gpu"}, Labels: map[string]string{"zone": "a", "pool": "inv"}, GPUs: Present, RDMA: Present}},
		{"sections absent", nil, map[string]any{"host": "h"}, HostFacts{Name: "h", Labels: map[string]string{}}},
		{"driver present, no devices", nil, map[string]any{"nvidia": map[string]any{"present": true}, "rdma": map[string]any{}},
			HostFacts{Name: "h", Labels: map[string]string{}, GPUs: Present, RDMA: Absent}},
		{"seen without", nil, map[string]any{"nvidia": map[string]any{"present": false, "gpus": []any{}}, "rdma": map[string]any{"devices": map[string]any{}}},
			HostFacts{Name: "h", Labels: map[string]string{}, GPUs: Absent, RDMA: Absent}},
		{"wrong type", nil, map[string]any{"nvidia": "yes", "rdma": []any{}}, HostFacts{Name: "h", Labels: map[string]string{}}},
		// A node only the Kubernetes API describes: the GPUs its device
		// plugin advertises; none advertised is not known to be none.
		{"node only, GPUs allocatable", nil, map[string]any{"node": map[string]any{"allocatable": map[string]any{"nvidia.com/gpu": "8"}}},
			HostFacts{Name: "h", Labels: map[string]string{}, GPUs: Present}},
		{"node only, no GPU allocatable", nil, map[string]any{"node": map[string]any{"allocatable": map[string]any{"nvidia.com/gpu": "0", "cpu": "64"}}},
			HostFacts{Name: "h", Labels: map[string]string{}}},
		{"host facts win over the node", nil, map[string]any{"nvidia": map[string]any{"present": false}, "node": map[string]any{"allocatable": map[string]any{"nvidia.com/gpu": "8"}}},
			HostFacts{Name: "h", Labels: map[string]string{}, GPUs: Absent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FactsOf("h", tt.h, tt.doc)); diff != "" {
				t.Errorf("FactsOf (-want +got):\n%s", diff)
			}
		})
	}
	if inv.Labels["zone"] != "" {
		t.Error("FactsOf wrote into the inventory's labels")
	}
}

// The built-in profiles run the rules that declare their fleet or every
// fleet, which policies' tests stand for with a selector of their own.
func TestBuiltinProfilesSelectDeclaredRules(t *testing.T) {
	set := mustLoad(t, true)
	engine, err := NewEngine(context.Background(), set, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gpu-training", "web-serving"} {
		p := mustResolve(t, set, name)
		var got, want []string
		for _, r := range engine.Rules() {
			if p.Selects(r) {
				got = append(got, r.ID)
			}
			if slices.Contains(r.Profiles, policies.ProfileAll) || slices.Contains(r.Profiles, name) {
				want = append(want, r.ID)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" || len(got) == 0 {
			t.Errorf("%s selects (-declared +got):\n%s", name, diff)
		}
	}
}

// Profiles are checked against the rules the engine compiled, a user
// policy's included; a profile naming a rule that does not exist is an
// error naming its file and line.
func TestNewEngineChecksProfiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	profile := write("site.yaml", "name: site\nincludes: [gpu-training]\nparams: {team_slack: '#ml'}\n")
	pol := write("site.rego", "package site\n\nslack := data.fleetaudit.params.team_slack\n")
	set, err := Load(true, profile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEngine(context.Background(), set, []string{pol}); err != nil {
		t.Errorf("a param a user policy reads: %v", err)
	}
	if _, err := NewEngine(context.Background(), set, nil); !errors.Is(err, ErrInvalidProfile) {
		t.Errorf("without the policy that reads team_slack: %v, want ErrInvalidProfile", err)
	}
	bad := write("bad.yaml", "name: bad\nrules:\n  severity:\n    hugetlb-cma: low\n")
	set, err = Load(true, bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEngine(context.Background(), set, nil); !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), bad+":4:") {
		t.Errorf("severity of no rule: %v, want %s:4", err, bad)
	}
	if e, err := NewEngine(context.Background(), nil, nil); err != nil || !slices.Equal(e.Fleets(), []string{""}) {
		t.Errorf("no fleets: %v, %v", e, err)
	}
}
