package policies

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"
)

// Rules evaluated together in one query (EvalRules, as the runner does with
// the rules whose input is new) give each rule the findings it gives alone,
// and only those rules get any; the sets a fleet prepares are bounded.
func TestEvalRulesIsEachAlone(t *testing.T) {
	e := newEngine(t, Options{Fleets: gpuFleets()})
	fq, _ := e.Queries("gpu-training")
	rules := fq.HostRules()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(26, 8))
	found := 0
	for h := range 10 {
		doc := testhost.Bench(h).Doc(t)
		input, err := e.RuleInputSections(doc, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		alone := make([][]any, len(rules))
		for i, r := range rules {
			v, timedOut, err := fq.EvalAlone(ctx, r, input, 0)
			if err != nil || timedOut {
				t.Fatalf("host %d, rule %s alone: %v (timed out: %v)", h, r.ID, err, timedOut)
			}
			alone[i] = v
			found += len(v)
		}
		for range 4 {
			var idx []int
			for i := range rules {
				if rng.IntN(3) == 0 {
					idx = append(idx, i)
				}
			}
			if h == 0 {
				idx = nil
				for i := range rules {
					idx = append(idx, i)
				}
			}
			vals := make([][]any, len(rules))
			if err := fq.EvalRules(ctx, idx, input, 0, vals); err != nil {
				t.Fatalf("host %d, rules %v: %v", h, idx, err)
			}
			for i, r := range rules {
				in := false
				for _, j := range idx {
					in = in || i == j
				}
				switch {
				case in && !reflect.DeepEqual(vals[i], alone[i]):
					t.Errorf("host %d, rule %s in %v: findings %v, alone %v", h, r.ID, idx, vals[i], alone[i])
				case !in && vals[i] != nil:
					t.Errorf("host %d, rule %s not in %v has findings %v", h, r.ID, idx, vals[i])
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no rule found anything: the test needs findings to compare")
	}

	// Sets past the bound are refused (their rules then run alone); those
	// prepared before it, and all the rules, are still served.
	var pairs [][]int
	for a := range rules {
		for b := a + 1; b < len(rules); b++ {
			pairs = append(pairs, []int{a, b})
		}
	}
	if len(pairs) <= maxSubsets {
		t.Fatalf("%d host rules make %d pairs; the test needs more than %d", len(rules), len(pairs), maxSubsets)
	}
	refused := 0
	for _, p := range pairs {
		full := len(fq.subsets) >= maxSubsets
		_, err := fq.subset(ctx, p)
		if errors.Is(err, errTooManySubsets) {
			refused++
		}
		if errors.Is(err, errTooManySubsets) != full || err != nil && !full {
			t.Fatalf("set %v, %d prepared before: %v", p, len(fq.subsets), err)
		}
	}
	if refused == 0 {
		t.Error("no set was refused")
	}
	if len(fq.subsets) != maxSubsets {
		t.Errorf("%d sets prepared, want the bound %d", len(fq.subsets), maxSubsets)
	}
	input, err := e.RuleInputSections(testhost.Bench(1).Doc(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(rules))
	for i := range all {
		all[i] = i
	}
	for _, idx := range [][]int{nil, pairs[0], all} {
		if err := fq.EvalRules(ctx, idx, input, 0, make([][]any, len(rules))); err != nil {
			t.Errorf("rules %v, past the bound: %v", idx, err)
		}
	}
}
