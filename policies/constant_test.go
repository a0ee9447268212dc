package policies

import (
	"context"
	"testing"
)

// A host rule that keeps meeting new inputs is checked once for being
// constant in its fleet: boot-param-forbidden where the fleet forbids
// nothing then reads nothing, so every host shares its result; where the
// fleet forbids a param, or for a rule that judges the host, it keeps its
// reads.
func TestMissedFindsConstantRules(t *testing.T) {
	ctx := context.Background()
	fleets := gpuFleets()
	fc := fleets["web-serving"]
	fc.Params = map[string]any{"forbidden_boot_params": []any{"nosmt"}}
	fleets["web-serving"] = fc
	e := newEngine(t, Options{Fleets: fleets})
	for _, tc := range []struct {
		fleet, rule string
		constant    bool
	}{
		{"gpu-training", "boot-param-forbidden", true},
		{"web-serving", "boot-param-forbidden", false},
		{"gpu-training", "sysctl-not-applied", false},
		// Partial evaluation keeps mitigations_off_in, which reads input,
		// as a rule: not a value.
		{"web-serving", "mitigations-off", false},
	} {
		fq := e.fleets[tc.fleet]
		i := -1
		for j, r := range fq.HostRules() {
			if r.ID == tc.rule {
				i = j
			}
		}
		if i < 0 {
			t.Fatalf("%s: no rule %s", tc.fleet, tc.rule)
		}
		if len(fq.Reads(i).Paths()) == 0 {
			t.Fatalf("%s in %s reads nothing before it missed", tc.rule, tc.fleet)
		}
		for range constantAfter - 1 {
			fq.Missed(ctx, i)
		}
		if len(fq.Reads(i).Paths()) == 0 {
			t.Errorf("%s in %s: checked before %d new inputs", tc.rule, tc.fleet, constantAfter)
		}
		fq.Missed(ctx, i)
		if got := len(fq.Reads(i).Paths()) == 0 && !fq.Reads(i).Whole(); got != tc.constant {
			t.Errorf("%s in %s: reads nothing %v, want %v", tc.rule, tc.fleet, got, tc.constant)
		}
	}
}
