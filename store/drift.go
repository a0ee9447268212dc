package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/store/factdiff"
)

// DriftSchema identifies the drift JSON document.
const DriftSchema = "fleetaudit.drift/v1"

// DriftQuery selects what Drift compares: two complete runs, and
// optionally hosts (globs, as path.Match reads them) and a fleet.
type DriftQuery struct {
	From, To RunID
	Hosts    []string
	Fleet    string
}

// Drift is what changed between two runs.
type Drift struct {
	Schema string `json:"schema"`
	From   Run    `json:"from"`
	To     Run    `json:"to"`
	// Hosts are the hosts of either run (that the query selects), sorted
	// by name; unchanged hosts are counted in the summary, not listed.
	Hosts   []HostDrift  `json:"hosts"`
	Summary DriftSummary `json:"summary"`
}

// Host states in a drift.
const (
	HostChanged   = "changed"   // facts or findings changed
	HostUnchanged = "unchanged" // same snapshot, same findings
	HostAdded     = "added"     // only in the later run
	HostRemoved   = "removed"   // only in the earlier run
	HostUnread    = "unread"    // not read in one of the runs: facts not compared
)

// HostDrift is one host's changes.
type HostDrift struct {
	Host      string `json:"host"`
	Fleet     string `json:"fleet"`
	FromFleet string `json:"from_fleet,omitempty"`
	State     string `json:"state"`
	// Unread says which run could not read the host, and why.
	Unread string             `json:"unread,omitempty"`
	Facts  []FactChange       `json:"facts"`
	New    []policies.Finding `json:"new"`
	// Resolved findings were in the earlier run and are not in the later
	// one, where their rule ran on collected facts.
	Resolved []policies.Finding `json:"resolved"`
	// Open findings are in both runs (the later run's shown).
	Open []policies.Finding `json:"open"`
	// Unknown findings were in the earlier run, and the later run cannot
	// say whether they still hold: the host was not read or not in it,
	// the rule did not run there, or a fact it cites was not collected.
	Unknown []policies.Finding `json:"unknown"`
}

// engineCoverage answers as the policy engine does what a snapshot
// collected and where each value was set.
func engineCoverage() factdiff.Coverage {
	return factdiff.Coverage{
		AbsenceKnown: policies.AbsenceKnown,
		Source:       func(doc map[string]any, fact string) string { return policies.EvidenceOf(doc, fact).Source },
	}
}

// Fact change kinds (factdiff's).
const (
	FactChanged      = factdiff.Changed
	FactAdded        = factdiff.Added
	FactRemoved      = factdiff.Removed
	FactMoved        = factdiff.Moved
	FactNotCollected = factdiff.NotCollected
)

// FactChange is one fact whose value or provenance changed.
type FactChange = factdiff.Change

// DriftSummary counts the drift.
type DriftSummary struct {
	Hosts     int `json:"hosts"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Unread    int `json:"unread"`
	Facts     int `json:"facts"`
	New       int `json:"new"`
	Resolved  int `json:"resolved"`
	Open      int `json:"open"`
	Unknown   int `json:"unknown"`
}

// runSide is one run's hosts and findings, by host.
type runSide struct {
	run      Run
	hosts    map[string]Host
	findings map[string][]Finding
	// fleetRules are the rules each fleet ran (the run's catalog); nil
	// when the run has none.
	fleetRules map[string][]string
	// refs, when set, stand for findings: read by loadRefSide, whose
	// findings are decoded only when the other run does not match them.
	refs map[string][]findingRef
}

// findingsOf are the side's findings of host for matchFindings against
// the later run's tf (inTo: the host is in it). A side of refs decodes
// only the findings tf leaves unmatched, which a drift lists as resolved
// or unknown; the others carry their key alone, as matchFindings needs,
// and so do those of a host gone from the later run (counted, not shown).
// Findings of a ref side are fit for ReportChanges, not a drift's Open.
func (sd *runSide) findingsOf(ctx context.Context, s Store, host string, tf []Finding, inTo bool) ([]Finding, error) {
	if sd.refs == nil {
		return sd.findings[host], nil
	}
	refs := sd.refs[host]
	if len(refs) == 0 {
		return nil, nil
	}
	matched := map[string]int{}
	if inTo {
		for _, f := range tf {
			matched[f.Key]++
		}
	}
	out := make([]Finding, len(refs))
	for i, r := range refs {
		out[i].Key = r.key
		if !inTo {
			continue
		}
		if matched[r.key] > 0 {
			matched[r.key]--
			continue
		}
		body, err := s.Blob(ctx, r.hash)
		if err != nil {
			return nil, err
		}
		if err := decodeFinding(body, &out[i].Finding); err != nil {
			return nil, fmt.Errorf("run %d: finding %s: %w", sd.run.ID, r.hash, err)
		}
	}
	return out, nil
}

func loadSide(ctx context.Context, s Store, id RunID) (*runSide, error) {
	return loadSideWith(ctx, s, id, func(side *runSide) error {
		findings, err := s.Findings(ctx, id)
		for _, f := range findings {
			side.findings[f.Host] = append(side.findings[f.Host], f)
		}
		return err
	})
}

// loadRefSide is loadSide with the findings' keys and blobs in place of
// the findings (runSide.findingsOf), when s can list them; a report's
// changes need the earlier run's unmatched findings only.
func loadRefSide(ctx context.Context, s Store, id RunID) (*runSide, error) {
	fr, ok := s.(findingReffer)
	if !ok {
		return loadSide(ctx, s, id)
	}
	return loadSideWith(ctx, s, id, func(side *runSide) error {
		refs, err := fr.findingRefs(ctx, id)
		side.refs = map[string][]findingRef{}
		for _, r := range refs {
			side.refs[r.host] = append(side.refs[r.host], r)
		}
		return err
	})
}

// loadSideWith reads complete run id's hosts and catalog, and its findings
// through fill.
func loadSideWith(ctx context.Context, s Store, id RunID, fill func(*runSide) error) (*runSide, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	if run.State != Complete {
		return nil, fmt.Errorf("run %d is %s: %w", id, run.State, errNotComplete(run))
	}
	hosts, err := s.Hosts(ctx, id)
	if err != nil {
		return nil, err
	}
	cat, err := loadCatalog(ctx, s, run)
	if err != nil {
		return nil, err
	}
	side := newSide(run, hosts, nil, cat)
	if err := fill(side); err != nil {
		return nil, err
	}
	return side, nil
}

func newSide(run Run, hosts []Host, findings []Finding, cat *Catalog) *runSide {
	side := &runSide{run: run, hosts: map[string]Host{}, findings: map[string][]Finding{}}
	for _, h := range hosts {
		if _, dup := side.hosts[h.Host]; !dup {
			side.hosts[h.Host] = h
		}
	}
	for _, f := range findings {
		side.findings[f.Host] = append(side.findings[f.Host], f)
	}
	if cat != nil {
		side.fleetRules = cat.FleetRules
		if side.fleetRules == nil {
			side.fleetRules = map[string][]string{}
		}
	}
	return side
}

func errNotComplete(r Run) error {
	if r.Name != "" {
		return fmt.Errorf("%w: run %q is recorded in %d shards and not all are complete: %s", ErrNotComplete, r.Name, len(r.Shards), r.Error)
	}
	switch r.State {
	case Incomplete:
		return fmt.Errorf("%w: its writer (%s) stopped or is still running, so its hosts and findings are not recorded", ErrNotComplete, r.Writer)
	case Failed:
		return fmt.Errorf("%w: the audit failed: %s", ErrNotComplete, r.Error)
	}
	return fmt.Errorf("%w: state %q", ErrNotComplete, r.State)
}

// Compute compares two complete runs of s.
func Compute(ctx context.Context, s Store, q DriftQuery) (*Drift, error) {
	from, err := loadSide(ctx, s, q.From)
	if err != nil {
		return nil, err
	}
	to, err := loadSide(ctx, s, q.To)
	if err != nil {
		return nil, err
	}
	return compute(ctx, s, q, from, to)
}

// compute compares the runs of two sides read already.
func compute(ctx context.Context, s Store, q DriftQuery, from, to *runSide) (*Drift, error) {
	for _, g := range q.Hosts {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("--host %q: %w", g, err)
		}
	}
	d := &Drift{Schema: DriftSchema, From: from.run, To: to.run, Hosts: []HostDrift{}}
	names := map[string]bool{}
	for h := range from.hosts {
		names[h] = true
	}
	for h := range to.hosts {
		names[h] = true
	}
	docs := docCache{s: s, docs: map[string]map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if !selected(name, q.Hosts) {
			continue
		}
		fh, inFrom := from.hosts[name]
		th, inTo := to.hosts[name]
		fleet := th.Fleet
		if !inTo {
			fleet = fh.Fleet
		}
		if q.Fleet != "" && fleet != q.Fleet && (!inFrom || fh.Fleet != q.Fleet) {
			continue
		}
		hd := HostDrift{Host: name, Fleet: fleet, Facts: []FactChange{}}
		if inFrom && inTo && fh.Fleet != th.Fleet {
			hd.FromFleet = fh.Fleet
		}
		// The rules the later run ran on the host: a rule its fleet no
		// longer runs resolves nothing.
		var ran []string
		if to.fleetRules != nil && inTo {
			ran = append([]string{}, to.fleetRules[th.Fleet]...)
		}
		ff, err := from.findingsOf(ctx, s, name, to.findings[name], inTo)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", name, err)
		}
		if err := hostDrift(ctx, &docs, [2]RunID{q.From, q.To}, &hd, fh, inFrom, th, inTo, ran, ff, to.findings[name]); err != nil {
			return nil, fmt.Errorf("host %s: %w", name, err)
		}
		d.Summary.Hosts++
		switch hd.State {
		case HostUnchanged:
			d.Summary.Unchanged++
		case HostChanged:
			d.Summary.Changed++
		case HostAdded:
			d.Summary.Added++
		case HostRemoved:
			d.Summary.Removed++
		case HostUnread:
			d.Summary.Unread++
		}
		d.Summary.Facts += len(hd.Facts)
		d.Summary.New += len(hd.New)
		d.Summary.Resolved += len(hd.Resolved)
		d.Summary.Open += len(hd.Open)
		d.Summary.Unknown += len(hd.Unknown)
		if hd.State != HostUnchanged {
			d.Hosts = append(d.Hosts, hd)
		}
	}
	return d, nil
}

func selected(host string, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, host); ok {
			return true
		}
	}
	return false
}

// docCache decodes each snapshot blob once.
type docCache struct {
	s    Store
	docs map[string]map[string]any
}

func (c *docCache) get(ctx context.Context, hash string) (map[string]any, error) {
	if hash == "" {
		return nil, nil
	}
	if d, ok := c.docs[hash]; ok {
		return d, nil
	}
	body, err := c.s.Blob(ctx, hash)
	if err != nil {
		return nil, err
	}
	doc, err := snapshot.DecodeDocument(body)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", hash, err)
	}
	// Only the two sides of one host are needed at a time.
	clear(c.docs)
	c.docs[hash] = doc
	return doc, nil
}

func hostDrift(ctx context.Context, docs *docCache, ids [2]RunID, hd *HostDrift, fh Host, inFrom bool, th Host, inTo bool, ran []string, ff, tf []Finding) error {
	plain := func(fs []Finding) []policies.Finding {
		out := make([]policies.Finding, len(fs))
		for i, f := range fs {
			out[i] = f.Finding
		}
		return out
	}
	hd.New, hd.Resolved, hd.Open, hd.Unknown = []policies.Finding{}, []policies.Finding{}, []policies.Finding{}, []policies.Finding{}
	switch {
	case !inFrom:
		hd.State = HostAdded
		hd.New = plain(tf)
		return nil
	case !inTo:
		hd.State = HostRemoved
		hd.Unknown = plain(ff)
		return nil
	}
	var fdoc, tdoc map[string]any
	if fh.Snapshot != th.Snapshot {
		var err error
		if fdoc, err = docs.get(ctx, fh.Snapshot); err != nil {
			return err
		}
		if tdoc, err = docs.get(ctx, th.Snapshot); err != nil {
			return err
		}
	}
	switch {
	case fh.Unread != "":
		hd.State, hd.Unread = HostUnread, fmt.Sprintf("not read in the earlier run (%d): %s", ids[0], fh.Unread)
	case th.Unread != "":
		hd.State, hd.Unread = HostUnread, fmt.Sprintf("not read in the later run (%d): %s", ids[1], th.Unread)
	case fdoc != nil && tdoc != nil:
		hd.Facts = factdiff.Diff(fdoc, tdoc, engineCoverage())
	}
	matchFindings(hd, ff, tf, th, ran, tdoc)
	if hd.State == "" {
		hd.State = HostUnchanged
		if len(hd.Facts) > 0 || len(hd.New) > 0 || len(hd.Resolved) > 0 || len(hd.Unknown) > 0 || hd.FromFleet != "" {
			hd.State = HostChanged
		}
	}
	return nil
}

// matchFindings splits a host's findings of both runs into new, resolved,
// open and unknown, matching keys one to one. A finding of the earlier run
// that the later run does not have is resolved only when the later run
// could have found it: the host was read, the rule ran, and every fact the
// finding cites that the later snapshot lacks is known to be absent.
func matchFindings(hd *HostDrift, ff, tf []Finding, th Host, ran []string, tdoc map[string]any) {
	left := map[string][]Finding{}
	for _, f := range ff {
		left[f.Key] = append(left[f.Key], f)
	}
	for _, f := range tf {
		if len(left[f.Key]) > 0 {
			left[f.Key] = left[f.Key][1:]
			hd.Open = append(hd.Open, f.Finding)
			continue
		}
		hd.New = append(hd.New, f.Finding)
	}
	for _, f := range ff {
		rest := left[f.Key]
		left[f.Key] = nil
		for _, g := range rest {
			if couldFind(g.Finding, th, ran, tdoc) {
				hd.Resolved = append(hd.Resolved, g.Finding)
			} else {
				hd.Unknown = append(hd.Unknown, g.Finding)
			}
		}
	}
	for _, list := range [][]policies.Finding{hd.New, hd.Resolved, hd.Open, hd.Unknown} {
		slices.SortStableFunc(list, func(a, b policies.Finding) int {
			return cmp.Or(
				-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
				cmp.Compare(a.Rule, b.Rule),
				cmp.Compare(a.Message, b.Message),
			)
		})
	}
}

// couldFind reports whether the later run would have reported f had it
// still held: see matchFindings. tdoc is nil when the snapshot did not
// change (its facts are as they were, so only the rule's run matters).
func couldFind(f policies.Finding, th Host, ran []string, tdoc map[string]any) bool {
	if ran != nil && !slices.Contains(ran, f.Rule) {
		return false
	}
	if th.Unread != "" || slices.Contains(th.Skipped, f.Rule) || slices.Contains(th.TimedOut, f.Rule) {
		return false
	}
	if tdoc == nil {
		return true
	}
	for _, ev := range f.Evidence {
		if _, ok := snapshot.Lookup(tdoc, ev.Fact); !ok && !policies.AbsenceKnown(tdoc, ev.Fact) {
			return false
		}
	}
	return true
}
