package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
)

// HistorySchema identifies the history JSON document.
const HistorySchema = "fleetaudit.history/v1"

// History is the recorded runs with their counts.
type History struct {
	Schema string       `json:"schema"`
	Runs   []RunHistory `json:"runs"`
}

// RunHistory is one run and its findings per fleet.
type RunHistory struct {
	Run
	// Fleets are sorted by name ("" is hosts that matched no fleet); empty
	// unless the run is complete.
	Fleets []FleetCounts `json:"fleets"`
}

// FleetCounts are one fleet's hosts and findings in one run.
type FleetCounts struct {
	Fleet      string         `json:"fleet"`
	Hosts      int            `json:"hosts"`
	Findings   int            `json:"findings"`
	BySeverity map[string]int `json:"by_severity"`
	// Waived are findings (of those counted) that a waiver covers.
	Waived int `json:"waived"`
}

// LoadHistory lists the runs q selects, newest first, with their counts.
func LoadHistory(ctx context.Context, s Store, q RunQuery) (*History, error) {
	runs, err := s.Runs(ctx, q)
	if err != nil {
		return nil, err
	}
	h := &History{Schema: HistorySchema, Runs: []RunHistory{}}
	ids := make([]RunID, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	counts, err := s.Counts(ctx, ids)
	if err != nil {
		return nil, err
	}
	byRun := map[RunID]map[string]*FleetCounts{}
	for _, r := range runs {
		fleets := map[string]*FleetCounts{}
		if r.State == Complete {
			var res struct {
				Summary audit.Summary `json:"summary"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil {
				return nil, fmt.Errorf("run %d: its result: %w", r.ID, err)
			}
			for name, fs := range res.Summary.Fleets {
				fleets[name] = &FleetCounts{Fleet: name, Hosts: fs.Hosts, BySeverity: map[string]int{}}
			}
		}
		byRun[r.ID] = fleets
	}
	for _, c := range counts {
		fc := byRun[c.Run][c.Fleet]
		if fc == nil {
			fc = &FleetCounts{Fleet: c.Fleet, BySeverity: map[string]int{}}
			byRun[c.Run][c.Fleet] = fc
		}
		fc.Findings += c.Findings
		fc.BySeverity[c.Severity] += c.Findings
		fc.Waived += c.Waived
	}
	for _, r := range runs {
		rh := RunHistory{Run: r, Fleets: []FleetCounts{}}
		for _, name := range slices.Sorted(maps.Keys(byRun[r.ID])) {
			rh.Fleets = append(rh.Fleets, *byRun[r.ID][name])
		}
		h.Runs = append(h.Runs, rh)
	}
	return h, nil
}

// Resolve turns a run reference into an id: a number, a sharded run's
// name, "latest" (the newest complete run) or "latest~N" (the Nth
// complete run before it).
// It checks that the run exists.
func Resolve(ctx context.Context, s Store, ref string) (RunID, error) {
	ref = strings.TrimSpace(ref)
	back := -1
	switch {
	case ref == "latest":
		back = 0
	case strings.HasPrefix(ref, "latest~"):
		n, err := strconv.Atoi(strings.TrimPrefix(ref, "latest~"))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("run %q: want a run id, latest or latest~N", ref)
		}
		back = n
	}
	if back >= 0 {
		runs, err := s.Runs(ctx, RunQuery{State: Complete, Limit: back + 1})
		if err != nil {
			return 0, err
		}
		if len(runs) <= back {
			return 0, fmt.Errorf("run %s: %w: the store has %d complete runs", ref, ErrNoRun, len(runs))
		}
		return runs[back].ID, nil
	}
	n, err := strconv.ParseInt(ref, 10, 64)
	if err != nil && ref != "" {
		// A sharded run's name.
		runs, err := s.Runs(ctx, RunQuery{})
		if err != nil {
			return 0, err
		}
		for _, r := range runs {
			if r.Name == ref {
				return r.ID, nil
			}
		}
	}
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("run %q: want a run id, latest or latest~N, or a sharded run's name", ref)
	}
	// A shard's own id names its sharded run.
	r, err := s.Run(ctx, RunID(n))
	if err != nil {
		return 0, err
	}
	return r.ID, nil
}

// Previous is the newest complete run before id.
func Previous(ctx context.Context, s Store, id RunID) (RunID, error) {
	runs, err := s.Runs(ctx, RunQuery{State: Complete})
	if err != nil {
		return 0, err
	}
	for _, r := range runs {
		if r.ID < id {
			return r.ID, nil
		}
	}
	return 0, fmt.Errorf("%w: no complete run before run %d to compare with", ErrNoRun, id)
}

// LoadResult reads a complete run back as the audit result it recorded
// (findings, hosts, errors, summary, waivers, the rules and each fleet's)
// for the reports.
func LoadResult(ctx context.Context, s Store, id RunID) (*audit.Result, Run, error) {
	cur, err := loadCurrent(ctx, s, id)
	if err != nil {
		return nil, cur.run, err
	}
	return cur.res, cur.run, nil
}

// current is a complete run as a report reads it: its findings and hosts
// decoded once, for the result, the drift and the first-seen walk alike.
type current struct {
	run Run
	res *audit.Result
	// findings are res.Findings with their match keys; hosts res.Hosts
	// with their snapshots (the same strings and slices, not copies).
	findings []Finding
	hosts    []Host
	cat      *Catalog
}

// loadCurrent reads run id; its run is set when the run was found.
func loadCurrent(ctx context.Context, s Store, id RunID) (current, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return current{}, err
	}
	cur := current{run: run}
	if run.State != Complete {
		return cur, fmt.Errorf("run %d is %s: %w", id, run.State, errNotComplete(run))
	}
	res := &audit.Result{}
	if err := json.Unmarshal(run.Result, res); err != nil {
		return cur, fmt.Errorf("run %d: its result: %w", id, err)
	}
	if cur.findings, err = s.Findings(ctx, id); err != nil {
		return cur, err
	}
	res.Findings = make([]policies.Finding, len(cur.findings))
	for i, f := range cur.findings {
		res.Findings[i] = f.Finding
	}
	if cur.hosts, err = s.Hosts(ctx, id); err != nil {
		return cur, err
	}
	for _, h := range cur.hosts {
		res.Hosts = append(res.Hosts, h.HostRun)
	}
	if cur.cat, err = loadCatalog(ctx, s, run); err != nil {
		return cur, err
	}
	if cur.cat != nil {
		res.Rules, res.FleetRules = cur.cat.Rules, cur.cat.FleetRules
	}
	if res.Errors == nil {
		res.Errors = []audit.HostError{}
	}
	cur.res = res
	return cur, nil
}
