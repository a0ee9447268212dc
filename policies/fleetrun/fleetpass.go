package fleetrun

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fleetaudit/fleetaudit/policies"
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

// hashers are valueHashers for fleetProjection, reused between hosts.
var hashers = sync.Pool{New: func() any { return new(valueHasher) }}

// fleetProjection is doc's fleet projection, the one already seen when
// another host of the run had the same: hosts of one configuration hold
// one copy, which groups them for the fleet pass.
func (s *runState) fleetProjection(doc map[string]any, d *docSections) *policies.Projection {
	proj := projectSections(s.e, doc, d)
	delete(proj, "host")
	p := policies.NewProjection(proj)
	parts, ok := projectionParts(s.e, proj, d)
	if !ok {
		// A value the hasher cannot read (a typed provenance): compared
		// with nothing, the host is a group of its own.
		return p
	}
	key := parts.key()
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if q, ok := s.projs[key]; ok {
		return q
	}
	if s.projs == nil {
		s.projs = map[digest]*policies.Projection{}
		s.parts = map[*policies.Projection]memberParts{}
	}
	if items := projectionItems(s.e, proj, d); items != nil {
		// Its terms from the sections' parts, each converted once.
		p.SetTerms(items)
	}
	s.projs[key] = p
	s.parts[p] = parts
	return p
}

// memberPart is the digest of one member's part of a projection.
type memberPart struct {
	name string
	part digest
}

// memberParts are a projection's member parts, by name.
type memberParts []memberPart

// key is the projection's digest, made of its parts.
func (ps memberParts) key() digest {
	var key []byte
	key = binary.AppendUvarint(key, uint64(len(ps)))
	for _, p := range ps {
		key = binary.AppendUvarint(key, uint64(len(p.name)))
		key = append(append(key, p.name...), p.part[:]...)
	}
	return sha256.Sum256(key)
}

// projectionParts are the digests of proj's member parts, by name: a
// shared section's is computed once, so a host costs a hash per member,
// not a walk of its whole projection, and equal projections have equal
// keys (memberParts.key) however they were made. ok is false when a value
// cannot be hashed.
func projectionParts(e *policies.Engine, proj map[string]any, d *docSections) (memberParts, bool) {
	h := hashers.Get().(*valueHasher)
	defer hashers.Put(h)
	names := h.keys[:0]
	for name := range proj {
		names = append(names, name)
	}
	slices.Sort(names)
	h.keys = names // the hasher's own key stack goes on after them
	defer func() { h.keys = names[:0] }()
	parts := make(memberParts, len(names))
	for i, name := range names {
		var part digest
		var ok bool
		if sec := d.of(name); sec != nil && !d.dotted {
			part, ok = sec.projectionDigest(e)
		} else {
			part, ok = partDigest(h, proj[name])
		}
		if !ok {
			return nil, false
		}
		parts[i] = memberPart{name, part}
	}
	return parts, true
}

// partDigest is a digest of one member's part of a projection.
func partDigest(h *valueHasher, v any) (digest, bool) {
	h.buf, h.bad = h.buf[:0], false
	h.value(v)
	return sha256.Sum256(h.buf), !h.bad
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
		groups []*policies.FleetGroup
		// first is the index in a.groups of the fleet's first group.
		first int32
	}
	var fleets []fleetGroups
	var byProj map[*policies.Projection]int32
	last := int32(-1)
	// In (fleet, host) order, the first of equal names in input order:
	// the one the fleet pass counts.
	for _, i := range a.sorted() {
		t := a.tmpl(i)
		if t.proj == nil {
			continue
		}
		if fleet := a.fleet(i); len(fleets) == 0 || fleets[len(fleets)-1].name != fleet {
			fleets = append(fleets, fleetGroups{name: fleet, first: int32(len(a.groups))})
			byProj = map[*policies.Projection]int32{}
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
			a.groups = append(a.groups, new(group))
			fg.groups = append(fg.groups, policies.NewFleetGroup(t.proj))
		}
		fg.groups[g-fg.first].AddHosts(1)
		a.hosts[i].group = g + 1
	}
	errs := make([]error, len(fleets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, f := range fleets {
		g.Go(func() error {
			slow, err := s.evalFleet(gctx, f.name, f.groups, a.groups[f.first:int(f.first)+len(f.groups)], workers)
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
	for _, t := range a.names.tmpls {
		t.proj = nil
	}
	s.parts = nil
	var failures []Failure
	for i, f := range fleets {
		if errs[i] != nil {
			failures = append(failures, Failure{Fleet: f.name, Err: errs[i]})
		}
	}
	return dups, failures, nil
}

// group is a group of the fleet pass: the findings fleet rules gave it.
type group struct {
	findings []*groupFinding
}

// groupFinding is a fleet-wide finding, Host left empty, and how many
// hosts have it: those of every group it was given to.
type groupFinding struct {
	policies.Finding
	hosts int
}

// evalFleet evaluates fleet's fleet-wide rules, workers at a time, each on
// its unit: the fleet's groups, or for a rule that regroups, those of its
// own facts (regroup.go). Each group of gs (fgs's, in order) gets its
// findings in rule order, unless a rule failed: then none does, and the
// error says why. It returns the rules that ran out of the budget.
func (s *runState) evalFleet(ctx context.Context, fleet string, fgs []*policies.FleetGroup, gs []*group, workers int) ([]string, error) {
	fq, ok := s.e.Queries(fleet)
	if !ok {
		return nil, fmt.Errorf("%w: %q", policies.ErrUnknownFleet, fleet)
	}
	rules := fq.FleetRules()
	if len(rules) == 0 || len(fgs) == 0 {
		return nil, nil
	}
	units, err := s.units(ctx, fleet, fq, fgs, workers)
	if err != nil {
		return nil, err
	}
	type outcome struct {
		findings []policies.Finding
		slow     bool
		err      error
	}
	outs := make([]outcome, len(rules))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	// Each unit's rules start as soon as its input is made, the unit of
	// the most groups (the slowest rules) first.
	order := make([]int, len(rules))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(len(units[j].groups), len(units[i].groups)) })
	var inErr error
	for _, i := range order {
		u, r := units[i], rules[i]
		if u.in == nil {
			if u.in, inErr = s.e.NewGroupInput(fleet, u.groups); inErr != nil {
				break
			}
		}
		in := u.in
		g.Go(func() error {
			fs, slow, err := fq.EvalGroupRule(gctx, r, in, s.budget)
			if gctx.Err() != nil {
				return gctx.Err()
			}
			outs[i] = outcome{fs, slow, err}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if inErr != nil {
		return nil, inErr
	}
	var slow []string
	var errs []error
	for i, o := range outs {
		if o.slow {
			slow = append(slow, rules[i].ID)
		}
		errs = append(errs, o.err)
	}
	if err := errors.Join(errs...); err != nil {
		return slow, err
	}
	var buf []int32
	for i, o := range outs {
		u := units[i]
		for _, f := range o.findings {
			j, _ := strconv.Atoi(f.Host)
			f.Host = ""
			gf := &groupFinding{Finding: f, hosts: u.hosts[j]}
			buf = u.of(j, buf)
			for _, m := range buf {
				gs[m].findings = append(gs[m].findings, gf)
			}
		}
	}
	return slow, nil
}

// units are the units each fleet rule is evaluated on: its facts' own
// groups (regroup) where fewer, else the fleet's groups. Their inputs are
// not made yet: evalFleet makes them one at a time (making one settles
// terms groups share).
func (s *runState) units(ctx context.Context, fleet string, fq *policies.Queries, fgs []*policies.FleetGroup, workers int) ([]*unit, error) {
	rules := fq.FleetRules()
	whole := &unit{groups: fgs, hosts: make([]int, len(fgs))}
	for i, g := range fgs {
		whole.hosts[i] = g.Count()
	}
	// Rules that declare the same facts share their groups, each found
	// once, workers at a time.
	regrouped := map[string]*unit{}
	var keys []string
	var firsts []*policies.Rule
	can := make([]bool, len(rules))
	for i, r := range rules {
		can[i] = !s.wholeGroups && regroups(fq, r)
		if k := factsKey(r); can[i] {
			if _, ok := regrouped[k]; !ok {
				regrouped[k] = nil
				keys, firsts = append(keys, k), append(firsts, r)
			}
		}
	}
	found := make([]*unit, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, r := range firsts {
		g.Go(func() error {
			if gctx.Err() == nil {
				found[i] = s.regroup(r, fgs)
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, k := range keys {
		regrouped[k] = found[i]
	}
	units := make([]*unit, len(rules))
	for i, r := range rules {
		units[i] = whole
		if u := regrouped[factsKey(r)]; u != nil && can[i] {
			units[i] = u
		}
	}
	return units, nil
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
func (a *Audit) group(i int32) *group {
	if g := a.hosts[i].group; g > 0 {
		return a.groups[g-1]
	}
	return nil
}

// Findings returns every finding: host findings in input order, then
// fleet-wide findings by fleet name and host.
func (a *Audit) Findings() []policies.Finding {
	var out []policies.Finding
	for i := range a.hosts {
		t := a.tmpl(int32(i))
		if t == nil {
			continue
		}
		for j := range t.findings {
			out = append(out, policies.ForHost(&t.findings[j], a.host(int32(i))))
		}
	}
	for _, i := range a.sorted() {
		if g := a.group(i); g != nil {
			for _, f := range g.findings {
				out = append(out, policies.ForHost(&f.Finding, a.host(i)))
			}
		}
	}
	return out
}

// Append adds the hosts, findings and failures of another run.
func (a *Audit) Append(b *Audit) {
	off := int32(len(a.groups))
	for i := range b.hosts {
		rec := a.names.record(b.Host(i), b.tmpl(int32(i)))
		if g := b.hosts[i].group; g > 0 {
			rec.group = g + off
		}
		a.hosts = append(a.hosts, rec)
	}
	a.groups = append(a.groups, b.groups...)
	a.Failures = append(a.Failures, b.Failures...)
}

// citesHost reports whether a finding's evidence cites the host's name.
func citesHost(f *policies.Finding) bool {
	return slices.ContainsFunc(f.Evidence, func(ev policies.Evidence) bool { return ev.Fact == "host" })
}

// Each yields every finding in report order: by fleet, most severe first,
// then host, then rule, with equal ones in the order Findings gives them.
// f is valid during the call only. When shared is not nil, f is *shared
// with another host's name: a writer may encode shared once for all the
// hosts that yield it.
func (a *Audit) Each(yield func(f *policies.Finding, shared *policies.Finding) bool) {
	order := a.sorted()
	type item struct {
		f      *policies.Finding
		shared bool
	}
	var items []item
	var cur policies.Finding
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
						if policies.SeverityRank(f.Severity) == rank {
							items = append(items, item{f, t.members.Load() > 1 && !citesHost(f)})
						}
					}
				}
				for _, i := range order[g:e] {
					grp := a.group(i)
					if grp == nil {
						continue
					}
					for _, gf := range grp.findings {
						if f := &gf.Finding; policies.SeverityRank(f.Severity) == rank {
							items = append(items, item{f, gf.hosts > 1 && !citesHost(f)})
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
					cur = policies.ForHost(it.f, host)
					var shared *policies.Finding
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

// Tally calls add once for each distinct finding Each yields, with the
// number of hosts it is yielded for, in no set order: what counts the
// findings of a large fleet without making each host's copy or sorting.
func (a *Audit) Tally(add func(f *policies.Finding, hosts int)) {
	tmpls := make([]int, len(a.names.tmpls))
	groups := make([]int, len(a.groups))
	for i := range a.hosts {
		h := &a.hosts[i]
		if h.tmpl == 0 {
			continue
		}
		tmpls[h.tmpl-1]++
		if h.group > 0 {
			groups[h.group-1]++
		}
	}
	for i, n := range tmpls {
		if n == 0 {
			continue
		}
		t := a.names.tmpls[i]
		for j := range t.findings {
			add(&t.findings[j], n)
		}
	}
	for i, n := range groups {
		if n == 0 {
			continue
		}
		for _, gf := range a.groups[i].findings {
			add(&gf.Finding, n)
		}
	}
}
