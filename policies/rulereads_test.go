package policies

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// A built-in rule reads only the facts it judges: hosts that differ in
// anything else (every host's own root= boot parameter) share its result
// instead of evaluating it again. hugetlb-cma-on-gpu reads the CMA params
// of both command lines, not the command lines whole.
func TestBuiltinRulesReadOnlyWhatTheyJudge(t *testing.T) {
	e, err := New(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rule string
		// notCovered are facts the rule's result must not depend on.
		notCovered []string
		// read are facts it must read.
		read []string
	}{
		{"hugetlb-cma-on-gpu",
			[]string{"boot.running.params.root", "boot.configured.params.root", "boot.running.cmdline"},
			[]string{"boot.running.params.hugetlb_cma", "boot.running.params.cma", "boot.configured.params.hugetlb_cma", "boot.configured.params.cma", "memory.cma_total_kb"}},
		{"max-map-count-low",
			[]string{"sysctl.running.vm.swappiness"},
			[]string{`sysctl.running["vm.max_map_count"]`}},
		{"numa-balancing-enabled",
			[]string{"sysctl.running.vm.swappiness"},
			[]string{`sysctl.running["kernel.numa_balancing"]`}},
		{"mitigations-off",
			[]string{"boot.running.params.root", "boot.configured.params.root", "boot.running.cmdline"},
			[]string{"boot.running.params.mitigations", "boot.configured.params.mitigations", "boot.configured.present"}},
		// The loader's params (every host its own root=UUID=...) are never
		// a pending change: boot-config-pending reads the params less them.
		{"boot-config-pending",
			[]string{"boot.running.params.root", "boot.running.params.BOOT_IMAGE", "boot.configured.params.ro", "boot.running.cmdline"},
			[]string{"boot.running.params.quiet", "boot.configured.params.quiet", "boot.configured.loader"}},
		// Every host's own sysctls leave sysctl-invalid shared: it reads the
		// congestion-control pair, not the sysctl maps whole.
		{"sysctl-invalid",
			[]string{"sysctl.running.vm.swappiness", "sysctl.configured.vm.max_map_count"},
			[]string{"sysctl.missing", `sysctl.configured["net.ipv4.tcp_congestion_control"]`, `sysctl.running["net.ipv4.tcp_available_congestion_control"]`}},
	} {
		r, ok := e.byID[tc.rule]
		if !ok {
			t.Fatalf("no rule %s", tc.rule)
		}
		reads := r.reads.named()
		if reads.whole {
			t.Fatalf("%s reads its input whole", tc.rule)
		}
		// covers reports whether path i of the reads covers fact: fact
		// is on or below it, and not below a key it is read without.
		covers := func(i int, fact string) bool {
			p := ast.Ref(reads.paths[i]).String()
			if p == fact {
				return true
			}
			rest, below := strings.CutPrefix(fact, p+".")
			key, _, _ := strings.Cut(rest, ".")
			return below && !slices.Contains(reads.lessAt(i), key)
		}
		for _, fact := range tc.notCovered {
			for i, p := range reads.names {
				if covers(i, fact) {
					t.Errorf("%s reads %s, which covers %s: hosts differing there evaluate it again", tc.rule, p, fact)
				}
			}
		}
		for _, fact := range tc.read {
			found := false
			for i := range reads.paths {
				if covers(i, fact) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s does not read %s (reads %v)", tc.rule, fact, reads.names)
			}
		}
	}
}
