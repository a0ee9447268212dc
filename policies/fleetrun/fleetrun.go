package fleetrun

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// template is one evaluation's outcome, shared by every host whose input
// it was: findings name the first such host, and are given each host's
// name when they are read (Audit.Each).
type template struct {
	findings          []policies.Finding
	skipped, timedOut []string
	unread            string
	image             bool
	podsUnread        bool
	// proj is the fleet projection, shared by every host with the same
	// (nil: the host takes no part in fleet rules).
	proj *policies.Projection
	// members counts the hosts that use it.
	members atomic.Int32
	// id is 1 + its index in the run's hostNames.tmpls.
	id int32
}

// class is the hosts whose snapshot files are equal but for the host name.
// The first host to reach it evaluates; the others wait for ready.
type class struct {
	ready  chan struct{}
	failed bool
	// rep is the first file less its host name's value, which starts at
	// split; key is its hash (classTable).
	rep   []byte
	split int
	key   uint64
	// match is what FleetOf reads of the document (RunOptions.FleetSections).
	match map[string]any
	// doc is the first file's document, kept for RunOptions.Loaded only:
	// the other hosts' are it with their own names.
	doc     map[string]any
	mu      sync.Mutex
	byFleet map[string]*template
}

func (c *class) get(fleet string) *template {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byFleet[fleet]
}

func (c *class) put(fleet string, t *template) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byFleet == nil {
		c.byFleet = map[string]*template{}
	}
	if _, ok := c.byFleet[fleet]; !ok {
		c.byFleet[fleet] = t
	}
}

// runState is one Run's shared state: the classes and the rule results
// seen so far.
type runState struct {
	e       *policies.Engine
	fleetOf func(string, map[string]any) string
	budget  time.Duration
	loaded  func(in HostInput, doc, like map[string]any)
	matchOf func(map[string]any) map[string]any

	classes *classTable

	rmu     sync.RWMutex
	results map[string][]any

	// projs are the fleet projections seen so far, by content.
	pmu   sync.Mutex
	projs map[digest]*policies.Projection
	// parts are their member parts (regroup.go).
	parts map[*policies.Projection]memberParts

	sections *sectionCache

	// wholeGroups keeps every fleet rule on the fleet's groups (tests).
	wholeGroups bool
}

// worker is one worker's scratch space.
type worker struct {
	buf  []byte
	keys ruleKeys
	// key holds the rule keys of the host being evaluated; vals, ends,
	// keyed and missing are evalRules' per-rule scratch.
	key     []byte
	vals    [][]any
	ends    []int
	keyed   []bool
	missing []int
	dec     snapshot.Decoder
	// sections is how the document being evaluated was made.
	sections docSections
}

// Audit is the result of a run, kept compact: one small record per host
// (read with Hosts and Host), whose findings it shares with every host
// of the same configuration. Each yields the findings in report order
// without holding them all.
type Audit struct {
	// Failures are hosts or fleets the engine could not evaluate.
	Failures []Failure
	// hosts has one record per input, in the order given.
	hosts []hostRecord
	names *hostNames
	// groups are the fleet-wide pass's groups of hosts, with their
	// findings (hostRecord.group).
	groups []*group
}

// Run audits the hosts with e and returns every finding at once: host
// findings in input order, then fleet-wide findings by fleet name and
// host. See Audit for the compact form and RunAudit for what a run does.
func Run(ctx context.Context, e *policies.Engine, hosts iter.Seq[HostInput], opts RunOptions) (*Report, error) {
	a, err := RunAudit(ctx, e, hosts, opts)
	if err != nil {
		return nil, err
	}
	return &Report{Hosts: slices.Collect(a.Hosts()), Findings: a.Findings(), Failures: a.Failures}, nil
}

// RunAudit audits the hosts with e: each is read and evaluated inside a
// bounded worker, then dropped, keeping only what its findings and the fleet-wide
// pass need, shared between hosts of the same configuration: memory grows
// with the configurations and a small record per host. Hosts whose
// snapshot files differ only in the host name are evaluated once; of a new
// configuration, only the rules whose input is new to the run are
// evaluated (see dedup.go). A host whose document cannot be loaded is a
// collection-error finding for it. RunAudit returns an error only when ctx
// ends.
func RunAudit(ctx context.Context, e *policies.Engine, hosts iter.Seq[HostInput], opts RunOptions) (*Audit, error) {
	s := &runState{e: e, fleetOf: opts.FleetOf, budget: opts.HostTimeout, loaded: opts.Loaded, wholeGroups: opts.wholeGroups,
		classes: newClassTable(), results: map[string][]any{}, sections: newSectionCache()}
	if s.fleetOf == nil {
		s.fleetOf = func(string, map[string]any) string { return "" }
	}
	if s.budget == 0 {
		s.budget = DefaultHostTimeout
	}
	s.matchOf = func(doc map[string]any) map[string]any {
		m := maps.Clone(doc)
		delete(m, "host")
		return m
	}
	if opts.FleetSections != nil {
		sections := opts.FleetSections
		s.matchOf = func(doc map[string]any) map[string]any {
			m := make(map[string]any, len(sections))
			for _, k := range sections {
				if v, ok := doc[k]; ok && k != "host" {
					m[k] = v
				}
			}
			return m
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Each worker writes its host's record in place: into a.hosts when
	// the run was told how many hosts come (RunOptions.Hosts), so a large
	// fleet's records are allocated once; beyond that into slots appended
	// when the workers are done.
	hint := max(opts.Hosts, 0)
	a := newAudit(hint)
	var over []*hostRecord
	var emu sync.Mutex
	errs := map[int]error{}
	var done atomic.Int64
	n := 0
	// Long-lived workers, each with its scratch space: a goroutine per
	// host would grow a new stack for every evaluation (Rego recurses
	// deeply) and start its buffers from nothing.
	type job struct {
		in  HostInput
		i   int
		rec *hostRecord
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := new(worker)
			for j := range jobs {
				run, t, err := s.host(ctx, j.in, w)
				*j.rec = a.names.record(run, t)
				if err != nil {
					emu.Lock()
					errs[j.i] = err
					emu.Unlock()
				}
				if opts.Progress != nil {
					opts.Progress(int(done.Add(1)))
				}
			}
		}()
	}
	for in := range hosts {
		if ctx.Err() != nil {
			break
		}
		i := n
		n++
		var rec *hostRecord
		if i < hint {
			rec = &a.hosts[i]
		} else {
			rec = new(hostRecord)
			over = append(over, rec)
		}
		select {
		case jobs <- job{in, i, rec}:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	s.classes.close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.hosts = a.hosts[:min(n, hint)]
	for _, o := range over {
		a.hosts = append(a.hosts, *o)
	}
	over = nil
	for i := range a.hosts {
		if t := a.tmpl(int32(i)); t != nil {
			t.members.Add(1)
		}
	}
	dups, fleetErrs, err := s.fleetPass(ctx, a, workers)
	if err != nil {
		return nil, err
	}
	for i := range a.hosts {
		if errs[i] == nil && dups[int32(i)] == "" {
			continue
		}
		run := a.Host(i)
		if err := errs[i]; err != nil {
			a.Failures = append(a.Failures, Failure{File: run.File, Host: run.Host, Fleet: run.Fleet, Err: err})
		}
		if prev, dup := dups[int32(i)]; dup {
			a.Failures = append(a.Failures, Failure{File: run.File, Host: run.Host, Fleet: run.Fleet,
				Err: fmt.Errorf("host name also used by %s; fleet-wide rules counted that file only", prev)})
		}
	}
	a.Failures = append(a.Failures, fleetErrs...)
	return a, nil
}

// host audits one input: from its class when its file's content was seen
// already, else by decoding it.
func (s *runState) host(ctx context.Context, in HostInput, w *worker) (HostRun, *template, error) {
	w.sections.reset()
	if in.Read == nil {
		doc, err := in.Load(ctx)
		run, t, _, err := s.evalDoc(ctx, in, doc, err, w)
		return run, t, err
	}
	raw, err := in.Read(ctx, w.buf[:0])
	if err != nil {
		run, t, _, err := s.evalDoc(ctx, in, nil, err, w)
		return run, t, err
	}
	if cap(raw) > cap(w.buf) && cap(raw) <= 4*snapshotBufferHint {
		w.buf = raw[:0]
	}
	host, start, end, ok := hostMember(raw)
	if !ok || host == "" {
		doc, err := s.decode(raw, w)
		run, t, _, err := s.evalDoc(ctx, in, doc, err, w)
		return run, t, err
	}
	c, seen := s.classes.find(raw, start, end)
	if c == nil {
		doc, err := s.decode(raw, w)
		run, t, _, err := s.evalDoc(ctx, in, doc, err, w)
		return run, t, err
	}
	if seen {
		select {
		case <-c.ready:
		case <-ctx.Done():
			return HostRun{File: in.Origin, Host: host}, nil, ctx.Err()
		}
		if !c.failed {
			fleet := s.fleetOf(host, c.match)
			if t := c.get(fleet); t != nil {
				if s.loaded != nil {
					doc := maps.Clone(c.doc)
					doc["host"] = host
					s.loaded(in, doc, c.doc)
				}
				return HostRun{File: in.Origin, Host: host, Fleet: fleet, Unread: t.unread, Skipped: t.skipped, Image: t.image, PodsUnread: t.podsUnread}, t, nil
			}
		}
	}
	doc, err := s.decode(raw, w)
	if !seen {
		defer close(c.ready)
		switch {
		case err != nil:
			c.failed = true
		case !w.sections.hostAt(start, end):
			// Another "host" member, or a file not read by its
			// members: the others are decoded for their own names.
			c.failed = true
		default:
			c.match = s.matchOf(doc)
			if s.loaded != nil {
				c.doc = doc
			}
		}
	}
	run, t, share, err := s.evalDoc(ctx, in, doc, err, w)
	if share {
		c.put(run.Fleet, t)
	}
	if !seen && !share {
		// Another fleet may still share it; an error or a time-out
		// is this host's alone.
		c.failed = c.failed || err != nil || (t != nil && len(t.timedOut) > 0)
	}
	return run, t, err
}

// snapshotBufferHint bounds the read buffer a worker keeps.
const snapshotBufferHint = 1 << 20

// evalDoc evaluates one decoded document (loadErr: it could not be read,
// and is audited as an unread host). share reports whether the outcome may
// serve other hosts of the same content: nothing in it depends on the
// host's name.
func (s *runState) evalDoc(ctx context.Context, in HostInput, doc map[string]any, loadErr error, w *worker) (run HostRun, t *template, share bool, err error) {
	e := s.e
	if loadErr == nil && doc == nil {
		loadErr = errors.New("no snapshot document")
	}
	if loadErr != nil {
		if ctx.Err() != nil {
			return HostRun{File: in.Origin, Host: in.Name}, nil, false, ctx.Err()
		}
		run = HostRun{File: in.Origin, Host: in.Name, Fleet: s.fleetOf(in.Name, nil)}
		doc = unreadDoc(in.Name, in.Origin, loadErr)
	} else {
		host, _ := doc["host"].(string)
		if host == "" {
			host = in.Name
			doc["host"] = host
		}
		run = HostRun{File: in.Origin, Host: host, Fleet: s.fleetOf(host, doc)}
	}
	if s.loaded != nil {
		s.loaded(in, doc, nil)
	}
	fq, ok := e.Queries(run.Fleet)
	if !ok {
		return run, nil, false, fmt.Errorf("%w: %q", policies.ErrUnknownFleet, run.Fleet)
	}
	t = new(template)
	cov := policies.CoverageOf(doc)
	if rules := fq.HostRules(); rules != nil {
		t.skipped = cov.Skipped(rules)
		t.findings, t.timedOut, err = s.evalRules(ctx, fq, run, doc, cov, w)
		for _, id := range t.timedOut {
			t.findings = append(t.findings, overBudget(e, run, e.RuleByID(id), s.budget))
		}
	}
	t.unread, t.image, t.podsUnread = cov.Unread(), cov.Image(), cov.PodsUnread()
	if fq.HasFleetRules() && t.unread == "" {
		// An unread host has no facts to compare: it would only drag the
		// fleet's majority towards empty values.
		t.proj = s.fleetProjection(doc, &w.sections)
	}
	run.Unread, run.Skipped, run.TimedOut, run.Image, run.PodsUnread = t.unread, t.skipped, t.timedOut, t.image, t.podsUnread
	share = loadErr == nil && err == nil && len(t.timedOut) == 0 && fq.Shareable()
	return run, t, share, err
}

// evalRules evaluates the host rules of fq on doc, each rule's result
// reused when a host with the same input for it was evaluated before.
func (s *runState) evalRules(ctx context.Context, fq *policies.Queries, run HostRun, doc map[string]any, cov *policies.Coverage, w *worker) ([]policies.Finding, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	rules := fq.HostRules()
	// Scratch of the worker's, for this host only.
	w.vals = append(w.vals[:0], make([][]any, len(rules))...)
	w.ends = append(w.ends[:0], make([]int, len(rules))...)
	w.keyed = append(w.keyed[:0], make([]bool, len(rules))...)
	vals, ends, keyed := w.vals, w.ends, w.keyed
	defer clear(w.vals)
	// Rule i's key is w.key[ends[i-1]:ends[i]]; keyed[i] is false when it
	// has none.
	key := func(i int) []byte {
		if i == 0 {
			return w.key[:ends[0]]
		}
		return w.key[ends[i-1]:ends[i]]
	}
	missing := w.missing[:0]
	defer func() { w.missing = missing[:0] }()
	w.keys.reset()
	w.key = w.key[:0]
	for i, r := range rules {
		w.key, keyed[i] = w.keys.appendKey(w.key, doc, run.Fleet, r, fq.Reads(i), &w.sections)
		ends[i] = len(w.key)
	}
	s.rmu.RLock()
	for i := range rules {
		if v, ok := s.results[string(key(i))]; ok && keyed[i] {
			vals[i] = v
			continue
		}
		missing = append(missing, i)
	}
	s.rmu.RUnlock()

	var slow []string
	var errs []error
	if len(missing) > 0 {
		for _, i := range missing {
			fq.Missed(ctx, i)
		}
		var err error
		slow, err = s.evalMissing(ctx, fq, doc, missing, vals, &w.sections)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if err != nil {
			errs = append(errs, err)
		}
		s.rmu.Lock()
		for _, i := range missing {
			if vals[i] != nil && keyed[i] {
				s.results[string(key(i))] = vals[i]
			}
		}
		s.rmu.Unlock()
	}
	admit := func(r *policies.Rule, f *policies.Finding) bool { return cov.Admits(r, f) }
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	var out []policies.Finding
	if n > 0 {
		out = make([]policies.Finding, 0, n)
	}
	for i, r := range rules {
		if vals[i] == nil {
			continue
		}
		var err error
		out, err = policies.AppendRuleFindings(out, r, vals[i], run.Host, doc, run.Fleet, fq.Severity(), admit, w.sections.evidence)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, slow, errors.Join(errs...)
}

// evalMissing evaluates the rules at indexes missing into vals, on the
// sections they read: in one query (Queries.EvalRules), or each alone when
// that one fails or runs out of the budget. Rules that run out of the
// budget alone are returned.
func (s *runState) evalMissing(ctx context.Context, fq *policies.Queries, doc map[string]any, missing []int, vals [][]any, secs *docSections) ([]string, error) {
	e := s.e
	rules := fq.HostRules()
	var sections map[string]bool
	for _, i := range missing {
		reads := fq.Reads(i)
		if reads.Whole() {
			sections = nil
			break
		}
		if sections == nil {
			sections = map[string]bool{}
		}
		for _, p := range reads.Paths() {
			if k, ok := p[0].Value.(ast.String); ok {
				sections[string(k)] = true
			}
		}
	}
	input, err := e.RuleInputSections(doc, sections, secs)
	if err != nil {
		return nil, fmt.Errorf("snapshot as Rego input: %w", err)
	}
	if len(missing) > 1 {
		err := fq.EvalRules(ctx, missing, input, s.budget, vals)
		if err == nil || ctx.Err() != nil {
			return nil, err
		}
		// Out of budget or a rule failed: each rule alone, below, as
		// the core's evalWithin does, so a host's findings do not depend on
		// which of its rules' inputs were new to the run.
	}
	var slow []string
	var errs []error
	for _, i := range missing {
		r := rules[i]
		one, timedOut, err := fq.EvalAlone(ctx, r, input, s.budget)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case timedOut:
			slow = append(slow, r.ID)
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		vals[i] = one
	}
	return slow, errors.Join(errs...)
}
