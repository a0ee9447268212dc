package policies

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The reference oracle. EvalHost and EvalFleet evaluate the rules the
// plain way: one host's whole document in one query, every fleet host a
// group of its own, no rule budget, nothing shared or cached. Production
// code (audit, the gate, remediate) evaluates through fleetrun.RunAudit
// only; these are kept exported for tests (policies/fleetrun, audit,
// collectors, configrepo), that check RunAudit's findings against them.

// EvalHost evaluates the host rules enabled for fleet against one snapshot
// document (see snapshot.Document; numbers as json.Number), with no
// budget. Findings come sorted by rule id, then in the rule's own
// (deterministic) order. A rule whose facts were not collected on the host
// does not fire (see coverage). Tests only: see the oracle above.
func (e *Engine) EvalHost(ctx context.Context, doc map[string]any, fleet string) ([]Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fq, ok := e.fleets[fleet]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownFleet, fleet)
	}
	if fq.host == nil {
		return nil, nil
	}
	input, err := e.ruleInput(doc)
	if err != nil {
		return nil, fmt.Errorf("snapshot as Rego input: %w", err)
	}
	cov := coverageOf(doc)
	host, _ := doc["host"].(string)
	of := func(*Rule, map[string]any) (string, map[string]any, error) { return host, doc, nil }
	admit := func(r *Rule, f *Finding) bool { return cov.admits(r, f) }
	findings, _, err := fq.evalWithin(ctx, fq.host, input, 0, of, fleet, admit)
	return findings, err
}

// EvalFleet evaluates the fleet-wide rules enabled for fleet over the
// projections (see Project) of its hosts, each host a group of its own.
// Host names must be unique. Findings come sorted by host, then rule id. A
// finding about a host whose facts for the rule were not collected is
// withheld, as in EvalHost. Tests only: see the oracle above.
func (e *Engine) EvalFleet(ctx context.Context, fleet string, hosts []map[string]any) ([]Finding, error) {
	groups := make([]*fleetGroup, len(hosts))
	names := make([]string, len(hosts))
	seen := make(map[string]bool, len(hosts))
	for i, h := range hosts {
		names[i], _ = h["host"].(string)
		if seen[names[i]] {
			return nil, fmt.Errorf("fleet %q: host name %q appears twice", fleet, names[i])
		}
		seen[names[i]] = true
		doc := maps.Clone(h)
		delete(doc, "host")
		groups[i] = &fleetGroup{proj: &projection{doc: doc}, count: 1}
	}
	if err := e.evalGroups(ctx, fleet, groups); err != nil {
		return nil, err
	}
	order := make([]int, len(hosts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return strings.Compare(names[x], names[y]) })
	var out []Finding
	for _, i := range order {
		for j := range groups[i].findings {
			out = append(out, forHost(&groups[i].findings[j], names[i]))
		}
	}
	return out, nil
}
