package policies

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"golang.org/x/sync/errgroup"
)

// The fleet-wide pass. Fleet rules see each distinct configuration of a
// fleet once:
//
//	{"fleet": name, "count": hosts,
//	 "groups": [{"group": i, "count": hosts, <projection less "host">}]}
//
// A group is the hosts of the fleet whose projections (Project: labels,
// errors, the facts fleet rules declare and their sources) are equal, so
// its findings, evidence and coverage are the same for each of them: a
// rule names a group in each finding, and the engine reports it for every
// host of the group, in host order, when the findings are read (Each). The
// work and the memory of the pass grow with the configurations; a host
// costs its group index.

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

// hashers are valueHashers for fleetProjection, reused between hosts.
var hashers = sync.Pool{New: func() any { return new(valueHasher) }}

// fleetProjection is doc's fleet projection, the one already seen when
// another host of the run had the same: hosts of one configuration hold
// one copy, which groups them for the fleet pass.
func (s *runState) fleetProjection(doc map[string]any, d *docSections) *projection {
	p := &projection{doc: s.e.projectSections(doc, d)}
	delete(p.doc, "host")
	key, ok := s.e.projectionKey(p.doc, d)
	if !ok {
		// A value the hasher cannot read (a typed provenance): compared
		// with nothing, the host is a group of its own.
		return p
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if q, ok := s.projs[key]; ok {
		return q
	}
	if s.projs == nil {
		s.projs = map[digest]*projection{}
	}
	if items := s.e.projectionItems(p.doc, d); items != nil {
		// Its terms from the sections' parts, each converted once.
		p.once.Do(func() { p.items = items })
	}
	s.projs[key] = p
	return p
}

// projectionKey is a digest of a projection made from a digest of each
// member's part: a shared section's is computed once, so a host costs a
// hash per member, not a walk of its whole projection. Equal projections
// have equal keys however they were made; ok is false when a value cannot
// be hashed.
func (e *Engine) projectionKey(proj map[string]any, d *docSections) (digest, bool) {
	h := hashers.Get().(*valueHasher)
	defer hashers.Put(h)
	names := h.keys[:0]
	for name := range proj {
		names = append(names, name)
	}
	slices.Sort(names)
	h.keys = names // the hasher's own key stack goes on after them
	var key []byte
	key = binary.AppendUvarint(key, uint64(len(names)))
	for _, name := range names {
		var part digest
		var ok bool
		if sec := d.of(name); sec != nil && !d.dotted {
			part, ok = sec.projectionDigest(e)
		} else {
			part, ok = partDigest(h, proj[name])
		}
		if !ok {
			h.keys = names[:0]
			return digest{}, false
		}
		key = binary.AppendUvarint(key, uint64(len(name)))
		key = append(append(key, name...), part[:]...)
	}
	h.keys = names[:0]
	return sha256.Sum256(key), true
}

// partDigest is a digest of one member's part of a projection.
func partDigest(h *valueHasher, v any) (digest, bool) {
	h.buf, h.bad = h.buf[:0], false
	h.value(v)
	return sha256.Sum256(h.buf), !h.bad
}

// fleetGroup is the hosts of one fleet that share a projection.
type fleetGroup struct {
	proj  *projection
	count int
	// findings are the group's fleet-wide findings, Host left empty:
	// every host of the group has each.
	findings []Finding
}

// fleetPass groups the evaluated hosts of a by fleet and projection,
// evaluates each fleet's rules on its groups, and keeps the findings per
// group. It returns the hosts left out as a second file with a name seen
// before in their fleet (index: that first file), and each fleet it could
// not evaluate in full.
func (s *runState) fleetPass(ctx context.Context, a *Audit, workers int) (map[int32]string, []Failure, error) {
	dups := map[int32]string{}
	type fleetGroups struct {
		name   string
		groups []*fleetGroup
	}
	var fleets []fleetGroups
	var byProj map[*projection]int32
	last := int32(-1)
	// In (fleet, host) order, the first of equal names in input order:
	// the one the fleet pass counts.
	for _, i := range a.sorted() {
		t := a.tmpl(i)
		if t.proj == nil {
			continue
		}
		if fleet := a.fleet(i); len(fleets) == 0 || fleets[len(fleets)-1].name != fleet {
			fleets = append(fleets, fleetGroups{name: fleet})
			byProj = map[*projection]int32{}
			last = -1
		}
		if last >= 0 && a.sameHost(last, i) {
			dups[i] = a.Host(int(last)).File
			continue
		}
		last = i
		fg := &fleets[len(fleets)-1]
		g, ok := byProj[t.proj]
		if !ok {
			g = int32(len(a.groups))
			byProj[t.proj] = g
			grp := &fleetGroup{proj: t.proj}
			a.groups = append(a.groups, grp)
			fg.groups = append(fg.groups, grp)
		}
		a.groups[g].count++
		a.hosts[i].group = g + 1
	}
	errs := make([]error, len(fleets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, f := range fleets {
		g.Go(func() error {
			slow, err := s.e.evalGroups(gctx, f.name, f.groups, s.budget, workers)
			if len(slow) > 0 {
				te := &TimeoutError{Rules: slow, Budget: s.budget}
				if err == nil {
					err = te // alone: the fleet's other findings are complete
				} else {
					err = errors.Join(err, te)
				}
			}
			errs[i] = err
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// Projections served the fleet pass only; the report needs none.
	for _, grp := range a.groups {
		grp.proj = nil
	}
	for _, t := range a.names.tmpls {
		t.proj = nil
	}
	var failures []Failure
	for i, f := range fleets {
		if errs[i] != nil {
			failures = append(failures, Failure{Fleet: f.name, Err: errs[i]})
		}
	}
	return dups, failures, nil
}

// TimeoutError is a fleet's Failure for fleet-wide rules that did not
// finish within the budget (RunOptions.HostTimeout): their findings are
// unknown. When it is the Failure's error itself, not joined with another,
// the fleet's other fleet-wide findings are complete.
type TimeoutError struct {
	Rules  []string
	Budget time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("fleet-wide %s %s did not finish within %s; %s findings for this fleet are unknown",
		plural(len(e.Rules), "rule", "rules"), strings.Join(e.Rules, ", "), e.Budget, plural(len(e.Rules), "its", "their"))
}

var (
	groupTerm = ast.StringTerm("group")
	countTerm = ast.StringTerm("count")
)

// evalGroups evaluates the fleet-wide rules of fleet over its groups with
// an evaluation budget (0: none) per rule, and puts each group's findings
// in it; it returns the rules that did not finish within the budget. With
// workers > 1 the rules are evaluated that many at a time.
func (e *Engine) evalGroups(ctx context.Context, fleet string, groups []*fleetGroup, budget time.Duration, workers int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fq, ok := e.fleets[fleet]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownFleet, fleet)
	}
	if fq.fleet == nil || len(groups) == 0 {
		return nil, nil
	}
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
	input := ast.NewObject(
		ast.Item(ast.StringTerm("fleet"), ast.StringTerm(fleet)),
		ast.Item(countTerm, ast.IntNumberTerm(total)),
		ast.Item(ast.StringTerm("groups"), ast.ArrayTerm(list...)),
	)
	// A finding's host, until it is put in its group, is the group's index.
	of := func(_ *Rule, f map[string]any) (string, map[string]any, error) {
		g, err := groupIndex(f, len(groups))
		if err != nil {
			return "", nil, err
		}
		return strconv.Itoa(g), groups[g].proj.doc, nil
	}
	covs := map[string]*coverage{}
	admit := func(r *Rule, f *Finding) bool {
		c, ok := covs[f.Host]
		if !ok {
			g, _ := strconv.Atoi(f.Host)
			c = coverageOf(groups[g].proj.doc)
			covs[f.Host] = c
		}
		return c.admits(r, f)
	}
	var findings []Finding
	var slow []string
	var err error
	if workers > 1 && len(fq.fleet.rules) > 1 {
		// The rules evaluate at once on one input.
		settle(input)
		findings, slow, err = fq.evalParallel(ctx, fq.fleet, input, budget, of, fleet, admit, workers)
	} else {
		findings, slow, err = fq.evalWithin(ctx, fq.fleet, input, budget, of, fleet, admit)
	}
	if err != nil {
		return slow, err
	}
	for _, f := range findings {
		g, _ := strconv.Atoi(f.Host)
		f.Host = ""
		groups[g].findings = append(groups[g].findings, f)
	}
	return slow, nil
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

// checkFleetInput refuses a fleet rule written for the input fleet rules
// saw before groups ({"hosts": [projection]}): it would find nothing.
func checkFleetInput(c *ast.Compiler, r *Rule) error {
	for _, p := range staticReads(c, r.ref).paths {
		if p[0].Equal(hostsTerm) {
			return fmt.Errorf("%s: fleet rule %s reads input.hosts, which fleet rules no longer see: they see each distinct configuration once, as input.groups (each with its \"count\" of hosts), and name a \"group\" in each finding; see \"Fleet-wide rules\" in docs/writing-policies.md", r.Location, r.ID)
		}
	}
	return nil
}

var hostsTerm = ast.StringTerm("hosts")

// sorted returns the indexes of the evaluated hosts by fleet, then host
// name, in input order for equal names.
func (a *Audit) sorted() []int32 {
	order := make([]int32, 0, len(a.hosts))
	for i := range a.hosts {
		if a.hosts[i].tmpl != 0 {
			order = append(order, int32(i))
		}
	}
	slices.SortStableFunc(order, func(x, y int32) int {
		return cmp.Or(strings.Compare(a.fleet(x), a.fleet(y)), a.compareHosts(x, y))
	})
	return order
}

// group returns host i's fleet group, or nil.
func (a *Audit) group(i int32) *fleetGroup {
	if g := a.hosts[i].group; g > 0 {
		return a.groups[g-1]
	}
	return nil
}

// Findings returns every finding: host findings in input order, then
// fleet-wide findings by fleet name and host.
func (a *Audit) Findings() []Finding {
	var out []Finding
	for i := range a.hosts {
		t := a.tmpl(int32(i))
		if t == nil {
			continue
		}
		for j := range t.findings {
			out = append(out, forHost(&t.findings[j], a.host(int32(i))))
		}
	}
	for _, i := range a.sorted() {
		if g := a.group(i); g != nil {
			for j := range g.findings {
				out = append(out, forHost(&g.findings[j], a.host(i)))
			}
		}
	}
	return out
}

// Append adds the hosts, findings and failures of another run.
func (a *Audit) Append(b *Audit) {
	off := int32(len(a.groups))
	var c namesCache
	for i := range b.hosts {
		rec := a.names.record(b.Host(i), b.tmpl(int32(i)), &c)
		if g := b.hosts[i].group; g > 0 {
			rec.group = g + off
		}
		a.hosts = append(a.hosts, rec)
	}
	a.groups = append(a.groups, b.groups...)
	a.Failures = append(a.Failures, b.Failures...)
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

// citesHost reports whether a finding's evidence cites the host's name.
func citesHost(f *Finding) bool {
	return slices.ContainsFunc(f.Evidence, func(ev Evidence) bool { return ev.Fact == "host" })
}

// Each yields every finding in report order: by fleet, most severe first,
// then host, then rule, with equal ones in the order Findings gives them.
// f is valid during the call only. When shared is not nil, f is *shared
// with another host's name: a writer may encode shared once for all the
// hosts that yield it.
func (a *Audit) Each(yield func(f *Finding, shared *Finding) bool) {
	order := a.sorted()
	type item struct {
		f      *Finding
		shared bool
	}
	var items []item
	var cur Finding
	for lo := 0; lo < len(order); {
		fleet := a.hosts[order[lo]].fleet
		hi := lo
		for hi < len(order) && a.hosts[order[hi]].fleet == fleet {
			hi++
		}
		for rank := 5; rank >= 0; rank-- {
			for g := lo; g < hi; {
				first := order[g]
				e := g + 1
				for e < hi && a.sameHost(first, order[e]) {
					e++
				}
				items = items[:0]
				for _, i := range order[g:e] {
					t := a.tmpl(i)
					for j := range t.findings {
						f := &t.findings[j]
						if SeverityRank(f.Severity) == rank {
							items = append(items, item{f, t.members.Load() > 1 && !citesHost(f)})
						}
					}
				}
				for _, i := range order[g:e] {
					grp := a.group(i)
					if grp == nil {
						continue
					}
					for j := range grp.findings {
						if f := &grp.findings[j]; SeverityRank(f.Severity) == rank {
							items = append(items, item{f, grp.count > 1 && !citesHost(f)})
						}
					}
				}
				if len(items) == 0 {
					g = e
					continue
				}
				host := a.host(first)
				slices.SortStableFunc(items, func(x, y item) int { return strings.Compare(x.f.Rule, y.f.Rule) })
				for _, it := range items {
					cur = forHost(it.f, host)
					var shared *Finding
					if it.shared {
						shared = it.f
					}
					if !yield(&cur, shared) {
						return
					}
				}
				g = e
			}
		}
		lo = hi
	}
}
