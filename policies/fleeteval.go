package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Fleet-wide rule evaluation over groups of hosts that share a projection:
// engine core, used by the runner's fleet pass and by the oracle.

// projection is what fleet rules read of a host, less its name, shared by
// every host of the run with the same.
type projection struct {
	doc map[string]any
	// items are doc's members as Rego terms, made once.
	once  sync.Once
	items [][2]*ast.Term
	err   error
}

// terms returns the projection's members as Rego terms (sources left out:
// evidence reads them from doc).
func (p *projection) terms(e *Engine) ([][2]*ast.Term, error) {
	p.once.Do(func() {
		v, err := e.ruleInput(p.doc)
		if err != nil {
			p.err = err
			return
		}
		p.items = make([][2]*ast.Term, 0, v.(ast.Object).Len())
		_ = v.(ast.Object).Iter(func(k, v *ast.Term) error {
			p.items = append(p.items, [2]*ast.Term{k, v})
			return nil
		})
	})
	return p.items, p.err
}

// fleetGroup is the hosts of one fleet that share a projection.
type fleetGroup struct {
	proj  *projection
	count int
	// findings are the group's fleet-wide findings, Host left empty:
	// every host of the group has each.
	findings []Finding
}

var (
	groupTerm = ast.StringTerm("group")
	countTerm = ast.StringTerm("count")
)

// evalGroups evaluates the fleet-wide rules of fleet over its groups in
// one query (the oracle's plain evaluation; the runner evaluates each rule
// alone, fleetrun/fleetpass.go) and puts each group's findings in it.
func (e *Engine) evalGroups(ctx context.Context, fleet string, groups []*fleetGroup) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fq, ok := e.fleets[fleet]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownFleet, fleet)
	}
	if fq.fleet == nil || len(groups) == 0 {
		return nil
	}
	in, err := e.newGroupInput(fleet, groups)
	if err != nil {
		return err
	}
	findings, _, err := fq.evalWithin(ctx, fq.fleet, in.value, 0, in.of, fleet, in.admit)
	if err != nil {
		return err
	}
	for _, f := range findings {
		g, _ := strconv.Atoi(f.Host)
		f.Host = ""
		groups[g].findings = append(groups[g].findings, f)
	}
	return nil
}

// groupInput is the fleet-wide rules' input made of groups, numbered in
// order: each group's projection with its index and its number of hosts.
type groupInput struct {
	fleet  string
	groups []*fleetGroup
	value  ast.Value
	mu     sync.Mutex
	covs   map[int]*coverage
}

func (e *Engine) newGroupInput(fleet string, groups []*fleetGroup) (*groupInput, error) {
	list := make([]*ast.Term, len(groups))
	total := 0
	for i, g := range groups {
		items, err := g.proj.terms(e)
		if err != nil {
			return nil, fmt.Errorf("fleet projection as Rego input: %w", err)
		}
		obj := make([][2]*ast.Term, 0, len(items)+2)
		obj = append(obj, [2]*ast.Term{groupTerm, ast.IntNumberTerm(i)}, [2]*ast.Term{countTerm, ast.IntNumberTerm(g.count)})
		obj = append(obj, items...)
		list[i] = ast.NewTerm(ast.NewObject(obj...))
		total += g.count
	}
	value := ast.NewObject(
		ast.Item(ast.StringTerm("fleet"), ast.StringTerm(fleet)),
		ast.Item(countTerm, ast.IntNumberTerm(total)),
		ast.Item(ast.StringTerm("groups"), ast.ArrayTerm(list...)),
	)
	return &groupInput{fleet: fleet, groups: groups, value: value, covs: map[int]*coverage{}}, nil
}

// of is a finding's host and document: until it is put in its group, the
// host is the group's index.
func (in *groupInput) of(_ *Rule, f map[string]any) (string, map[string]any, error) {
	g, err := groupIndex(f, len(in.groups))
	if err != nil {
		return "", nil, err
	}
	return strconv.Itoa(g), in.groups[g].proj.doc, nil
}

// admit reports whether finding f (of) rests on its group's collected facts.
func (in *groupInput) admit(r *Rule, f *Finding) bool {
	g, _ := strconv.Atoi(f.Host)
	in.mu.Lock()
	c, ok := in.covs[g]
	if !ok {
		c = coverageOf(in.groups[g].proj.doc)
		in.covs[g] = c
	}
	in.mu.Unlock()
	return c.admits(r, f)
}

// groupIndex reads the group a fleet-wide finding names.
func groupIndex(f map[string]any, n int) (int, error) {
	x, ok := f["group"]
	if !ok {
		if _, ok := f["host"]; ok {
			return 0, errors.New(`a fleet-wide finding names "group" (input.groups[_].group), not "host": fleet rules see each configuration once (see docs/writing-policies.md)`)
		}
		return 0, errors.New(`a fleet-wide finding needs "group", the input.groups[_].group of the deviating hosts`)
	}
	var g int64
	var err error
	switch v := x.(type) {
	case json.Number:
		g, err = v.Int64()
	case float64:
		if v != math.Trunc(v) {
			err = errors.New("not an integer")
		}
		g = int64(v)
	case int:
		g = int64(v)
	case int64:
		g = v
	default:
		err = fmt.Errorf("a %T", x)
	}
	if err != nil || g < 0 || g >= int64(n) {
		return 0, fmt.Errorf("finding names group %v, which is not one of the fleet's %d groups", x, n)
	}
	return int(g), nil
}

// forHost is a shared finding as it reads for host.
func forHost(f *Finding, host string) Finding {
	out := *f
	out.Host = host
	cloned := false
	for i, ev := range f.Evidence {
		if ev.Fact == "host" {
			if !cloned {
				out.Evidence = slices.Clone(f.Evidence)
				cloned = true
			}
			out.Evidence[i].Value = host
		}
	}
	return out
}
