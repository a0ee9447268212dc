package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
)

// ReportChanges is what changed between the complete run before id and
// id, as the compliance reports show it; nil when id is the first
// complete run.
func ReportChanges(ctx context.Context, s Store, id RunID) (*reports.Changes, error) {
	prev, err := Previous(ctx, s, id)
	if errors.Is(err, ErrNoRun) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := Compute(ctx, s, DriftQuery{From: prev, To: id})
	if err != nil {
		return nil, err
	}
	return d.ReportChanges(), nil
}

// ReportRun is a complete run read for its compliance report: its
// findings and hosts read and decoded once, for the result, the changes
// and the first-seen walk alike (LoadResult, ReportChanges and FirstSeen
// each read them again).
type ReportRun struct{ cur current }

// LoadReportRun reads complete run id for its report.
func LoadReportRun(ctx context.Context, s Store, id RunID) (*ReportRun, error) {
	cur, err := loadCurrent(ctx, s, id)
	if err != nil {
		return nil, err
	}
	return &ReportRun{cur: cur}, nil
}

// Result is the run's result, as LoadResult reads it.
func (r *ReportRun) Result() *audit.Result { return r.cur.res }

// Run is the run.
func (r *ReportRun) Run() Run { return r.cur.run }

// Changes are ReportChanges of the run.
func (r *ReportRun) Changes(ctx context.Context, s Store) (*reports.Changes, error) {
	id := r.cur.run.ID
	prev, err := Previous(ctx, s, id)
	if errors.Is(err, ErrNoRun) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	from, err := loadRefSide(ctx, s, prev)
	if err != nil {
		return nil, err
	}
	d, err := compute(ctx, s, DriftQuery{From: prev, To: id}, from, newSide(r.cur.run, r.cur.hosts, r.cur.findings, r.cur.cat))
	if err != nil {
		return nil, err
	}
	return d.ReportChanges(), nil
}

// FirstSeen is FirstSeen of the run.
func (r *ReportRun) FirstSeen(ctx context.Context, s Store, since time.Time) (reports.Seen, error) {
	return firstSeen(ctx, s, r.cur.run, r.cur.findings, since)
}

// ReportChanges summarizes d for the compliance reports: facts that one
// run did not collect are left out (nothing is known to have changed).
func (d *Drift) ReportChanges() *reports.Changes {
	c := &reports.Changes{
		Previous: reports.RunInfo{ID: strconv.FormatInt(int64(d.From.ID), 10), At: d.From.StartedAt,
			Hosts: d.From.Hosts, Audited: d.From.Audited, Unread: d.From.Unread},
		New: []policies.Finding{}, Resolved: []policies.Finding{}, Facts: []reports.FactChange{},
		Added: []reports.HostRef{}, Gone: []reports.HostRef{},
	}
	for _, h := range d.Hosts {
		c.New = append(c.New, h.New...)
		c.Resolved = append(c.Resolved, h.Resolved...)
		c.Unknown += len(h.Unknown)
		switch h.State {
		case HostAdded:
			c.Added = append(c.Added, reports.HostRef{Host: h.Host, Fleet: h.Fleet})
		case HostRemoved:
			c.Gone = append(c.Gone, reports.HostRef{Host: h.Host, Fleet: h.Fleet})
		case HostUnread:
			c.Unread++
		}
		for _, f := range h.Facts {
			if f.Change == FactNotCollected {
				continue
			}
			fc := reports.FactChange{Host: h.Host, Fleet: h.Fleet, Fact: f.Fact, Change: f.Change, Source: f.AfterSource}
			if f.Change == FactRemoved {
				fc.Source = f.BeforeSource
			}
			if f.Before != nil {
				fc.Before = reports.ValueText(f.Before)
			}
			if f.After != nil {
				fc.After = reports.ValueText(f.After)
			}
			c.Facts = append(c.Facts, fc)
		}
	}
	return c
}

// FirstSeen says when each finding of run id was first seen, walking back
// through the complete runs before it that started at or after since. A
// finding (its key, on its host) is carried back over each run that held
// it, and over runs that could not have found it (the host not in the run
// or not read, the rule skipped or timed out there); the first run that
// read the host, ran the rule and did not find it ends the stretch. nil
// when no earlier run was read.
func FirstSeen(ctx context.Context, s Store, id RunID, since time.Time) (reports.Seen, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	cur, err := s.Findings(ctx, id)
	if err != nil {
		return nil, err
	}
	return firstSeen(ctx, s, run, cur, since)
}

func firstSeen(ctx context.Context, s Store, run Run, cur []Finding, since time.Time) (reports.Seen, error) {
	id := run.ID
	runs, err := s.Runs(ctx, RunQuery{Since: since, State: Complete})
	if err != nil {
		return nil, err
	}
	type stretch struct {
		host, rule string
		first      Run
		live       bool
	}
	byKey := map[string]*stretch{}
	for _, f := range cur {
		if byKey[f.Key] == nil {
			byKey[f.Key] = &stretch{host: f.Host, rule: f.Rule, first: run, live: true}
		}
	}
	live, oldest := len(byKey), run
	for _, r := range runs { // newest first
		if r.ID >= id {
			continue
		}
		if live == 0 {
			break
		}
		oldest = r
		held, err := heldKeys(ctx, s, r.ID)
		if err != nil {
			return nil, err
		}
		hosts, err := s.Hosts(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		read := map[string]Host{}
		for _, h := range hosts {
			if _, dup := read[h.Host]; !dup {
				read[h.Host] = h
			}
		}
		for k, st := range byKey {
			switch h, ok := read[st.host]; {
			case !st.live:
			case held[k]:
				st.first = r
			case ok && h.Unread == "" && !slices.Contains(h.Skipped, st.rule) && !slices.Contains(h.TimedOut, st.rule):
				st.live = false
				live--
			}
		}
	}
	if oldest.ID == id {
		return nil, nil
	}
	out := make(reports.Seen, len(cur))
	for i := range cur {
		st := byKey[cur[i].Key]
		out[reports.SeenKey(&cur[i].Finding)] = reports.FirstSeen{Run: strconv.FormatInt(int64(st.first.ID), 10), At: st.first.StartedAt,
			AtLeast: st.live && st.first.ID == oldest.ID}
	}
	return out, nil
}
