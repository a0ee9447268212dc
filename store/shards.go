package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// A sharded run is n rows of runs with one name, a shard each, each
// written by its runner in its own transactions as an unsharded run is.
// Readers (Runs, Run, Hosts, Findings, Counts, Trend) see the rows as one
// run whose id is its first row's: complete once every shard is, and
// until then without counts, hosts or findings, its Error naming the
// shards missing, failed or unfinished. A missing shard's hosts are never
// counted, as clean or otherwise.

// claimShard checks that shard of shards may be recorded in run name, in
// BeginRun's transaction, and removes an earlier failed or unfinished
// attempt at it (its writer failed, died, or is replaced).
func (s *DB) claimShard(ctx context.Context, tx *sql.Tx, name string, shard, shards int) error {
	if err := s.d.lockWrites(ctx, tx); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, shard, shards, state FROM runs WHERE name = ?`, dbText(name))
	if err != nil {
		return err
	}
	var replace []RunID
	for rows.Next() {
		var id RunID
		var sh, n int
		var state string
		if err := rows.Scan(&id, &sh, &n, &state); err != nil {
			rows.Close()
			return err
		}
		switch {
		case n != shards:
			rows.Close()
			return fmt.Errorf("run %q is recorded in %d shards (run %d), not %d", name, n, id, shards)
		case sh == shard && state == Complete:
			rows.Close()
			return fmt.Errorf("shard %d/%d of run %q is recorded already (run %d)", shard, shards, name, id)
		case sh == shard:
			replace = append(replace, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range replace {
		// The foreign keys cascade to its rows.
		if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, int64(id)); err != nil {
			return err
		}
	}
	return nil
}

// overlap says which hosts of shard row id (its hosts written in tx) a
// complete shard of the same run has recorded already: a runner whose
// shard function differs, or two given the same --shard, would count
// them twice. "" when none.
func overlap(ctx context.Context, tx *sql.Tx, id RunID, name string, shards int) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT h.host, r.shard, r.id FROM run_hosts h JOIN runs r ON r.id = h.run_id
		WHERE r.name = ? AND r.id <> ? AND r.state = ? AND h.host IN (SELECT host FROM run_hosts WHERE run_id = ?)
		ORDER BY h.host, r.shard`, dbText(name), int64(id), Complete, int64(id))
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var hosts []string
	n, last := 0, ""
	for rows.Next() {
		var host string
		var shard, other int64
		if err := rows.Scan(&host, &shard, &other); err != nil {
			return "", err
		}
		if n == 0 || host != last {
			n++
		}
		last = host
		if len(hosts) < 5 {
			hosts = append(hosts, fmt.Sprintf("%s (shard %d/%d, run %d)", fromDBText(host), shard, shards, other))
		}
	}
	if err := rows.Err(); err != nil || n == 0 {
		return "", err
	}
	more := ""
	if n > len(hosts) {
		more = fmt.Sprintf(" and %d more", n-len(hosts))
	}
	return fmt.Sprintf("%d hosts of this shard are recorded by another shard of run %q already: %s%s; the runners split the fleet differently (another fleetaudit, inventory or --shard), so this shard is not counted: rerun it as the others split", n, name, strings.Join(hosts, ", "), more), nil
}

// member is a row of runs as grouping reads it.
type member struct {
	id             RunID
	name           string
	shard, shards  int
	state, started string
}

// group is a logical run: one row, or the rows of a sharded run.
type group struct {
	id      RunID
	started string
	state   string
	members []member
	// live: an unfinished row started at or after Prune's live bound.
	live bool
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// groups reads every row of runs (without their documents) as logical
// runs, oldest first; liveFrom, when set, marks groups with an
// incomplete row started since.
func groups(ctx context.Context, q queryer, liveFrom string) ([]*group, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, name, shard, shards, state, started_at FROM runs ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*group
	named := map[string]*group{}
	for rows.Next() {
		var m member
		if err := rows.Scan(&m.id, &m.name, &m.shard, &m.shards, &m.state, &m.started); err != nil {
			return nil, err
		}
		g := named[m.name]
		if g == nil || m.name == "" {
			g = &group{id: m.id, started: m.started}
			out = append(out, g)
			if m.name != "" {
				named[m.name] = g
			}
		}
		g.members = append(g.members, m)
		g.started = min(g.started, m.started)
		if m.state == Incomplete && liveFrom != "" && m.started >= liveFrom {
			g.live = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, g := range out {
		g.state = groupState(g.members)
	}
	return out, nil
}

// groupState is a logical run's state: complete when every shard is,
// failed when one failed, else incomplete (a shard missing or unfinished).
func groupState(ms []member) string {
	if len(ms) == 1 && ms[0].name == "" {
		return ms[0].state
	}
	done := map[int]bool{}
	n, failed := 0, false
	for _, m := range ms {
		n = max(n, m.shards)
		failed = failed || m.state == Failed
		if m.state == Complete {
			done[m.shard] = true
		}
	}
	switch {
	case failed:
		return Failed
	case len(done) == n:
		return Complete
	}
	return Incomplete
}

// Runs implements Store: logical runs, newest first.
func (s *DB) Runs(ctx context.Context, q RunQuery) ([]Run, error) {
	gs, err := groups(ctx, s.db, "")
	if err != nil {
		return nil, fmt.Errorf("store %s: listing runs: %w", s.path, err)
	}
	since := ""
	if !q.Since.IsZero() {
		since = formatTime(q.Since)
	}
	var picked []*group
	var ids []RunID
	for _, g := range slices.Backward(gs) {
		if g.started < since || q.State != "" && g.state != q.State {
			continue
		}
		if q.Limit > 0 && len(picked) == q.Limit {
			break
		}
		picked = append(picked, g)
		for _, m := range g.members {
			ids = append(ids, m.id)
		}
	}
	rows, err := s.physicalRuns(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Run, 0, len(picked))
	for _, g := range picked {
		parts := make([]Run, 0, len(g.members))
		for _, m := range g.members {
			parts = append(parts, rows[m.id])
		}
		r, err := merge(parts)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", s.path, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// physicalRuns reads rows of runs by id.
func (s *DB) physicalRuns(ctx context.Context, ids []RunID) (map[RunID]Run, error) {
	out := map[RunID]Run{}
	for chunk := range chunks(ids, 500) {
		in, args := placeholders(chunk)
		if err := s.scanRuns(ctx, out, `SELECT `+runColumns+` FROM runs WHERE id IN (`+in+`)`, args...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *DB) scanRuns(ctx context.Context, out map[RunID]Run, query string, args ...any) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("store %s: listing runs: %w", s.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return fmt.Errorf("store %s: %w", s.path, err)
		}
		out[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store %s: listing runs: %w", s.path, err)
	}
	return nil
}

// Run implements Store: the logical run that row id is part of.
func (s *DB) Run(ctx context.Context, id RunID) (Run, error) {
	r, err := s.physicalRun(ctx, id)
	if err != nil || r.Name == "" {
		return r, err
	}
	rows := map[RunID]Run{}
	if err := s.scanRuns(ctx, rows, `SELECT `+runColumns+` FROM runs WHERE name = ?`, dbText(r.Name)); err != nil {
		return Run{}, err
	}
	parts := slices.SortedFunc(maps.Values(rows), func(a, b Run) int { return cmp.Compare(a.ID, b.ID) })
	m, err := merge(parts)
	if err != nil {
		return Run{}, fmt.Errorf("store %s: %w", s.path, err)
	}
	return m, nil
}

// rowsOf are the rows of the logical run id, in shard order.
func (s *DB) rowsOf(ctx context.Context, id RunID) (Run, []RunID, error) {
	r, err := s.Run(ctx, id)
	if err != nil {
		return Run{}, nil, err
	}
	if r.Name == "" {
		return r, []RunID{r.ID}, nil
	}
	if r.State != Complete {
		// The shards recorded so far are not the run: none of its hosts
		// or findings until every shard is.
		return r, nil, nil
	}
	var ids []RunID
	for _, sh := range r.Shards {
		if sh.ID != 0 {
			ids = append(ids, sh.ID)
		}
	}
	return r, ids, nil
}

// Hosts implements Store: a sharded run's hosts are its shards' in
// shard order.
func (s *DB) Hosts(ctx context.Context, id RunID) ([]Host, error) {
	_, ids, err := s.rowsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []Host
	for _, id := range ids {
		hs, err := s.hosts(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, hs...)
	}
	return out, nil
}

// Findings implements Store: a sharded run's findings are its shards' in
// report order (audit.Result.Findings).
func (s *DB) Findings(ctx context.Context, id RunID) ([]Finding, error) {
	_, ids, err := s.rowsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, id := range ids {
		fs, err := s.findings(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	if len(ids) > 1 {
		slices.SortStableFunc(out, func(a, b Finding) int {
			return cmp.Or(cmp.Compare(a.Fleet, b.Fleet),
				cmp.Compare(policies.SeverityRank(b.Severity), policies.SeverityRank(a.Severity)),
				cmp.Compare(a.Host, b.Host), cmp.Compare(a.Rule, b.Rule))
		})
	}
	return out, nil
}

// Counts implements Store: a sharded run's are its shards' summed, and
// none until every shard is complete.
func (s *DB) Counts(ctx context.Context, ids []RunID) ([]Count, error) {
	var out []Count
	for _, id := range ids {
		r, rows, err := s.rowsOf(ctx, id)
		if errors.Is(err, ErrNoRun) {
			continue // removed since it was listed: no rows, as before
		}
		if err != nil {
			return nil, err
		}
		if r.Name != "" && r.State != Complete {
			continue
		}
		cs, err := s.counts(ctx, rows)
		if err != nil {
			return nil, err
		}
		sum := map[[2]string]*Count{}
		for _, c := range cs {
			k := [2]string{c.Fleet, c.Severity}
			if sum[k] == nil {
				sum[k] = &Count{Run: r.ID, Fleet: c.Fleet, Severity: c.Severity}
			}
			sum[k].Findings += c.Findings
			sum[k].Waived += c.Waived
		}
		for _, k := range slices.SortedFunc(maps.Keys(sum), func(a, b [2]string) int {
			return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		}) {
			out = append(out, *sum[k])
		}
	}
	slices.SortStableFunc(out, func(a, b Count) int { return cmp.Compare(a.Run, b.Run) })
	return out, nil
}

// Trend implements Store: a sharded run has one point per fleet, its
// shards' summed, and none until every shard is complete.
func (s *DB) Trend(ctx context.Context, ids []RunID) ([]reports.TrendPoint, error) {
	var out []reports.TrendPoint
	for _, id := range slices.Sorted(slices.Values(ids)) {
		r, rows, err := s.rowsOf(ctx, id)
		if errors.Is(err, ErrNoRun) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if r.Name == "" {
			ps, err := s.trend(ctx, rows)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
			continue
		}
		if r.State != Complete {
			continue
		}
		ps, err := s.trend(ctx, rows)
		if err != nil {
			return nil, err
		}
		byFleet := map[string]*reports.TrendPoint{}
		for _, p := range ps {
			q := byFleet[p.Fleet]
			if q == nil {
				q = &reports.TrendPoint{Run: strconv.FormatInt(int64(r.ID), 10), At: r.StartedAt, Fleet: p.Fleet, Findings: map[string]int{}}
				byFleet[p.Fleet] = q
			}
			q.Checks += p.Checks
			q.Failing += p.Failing
			for sev, n := range p.Findings {
				q.Findings[sev] += n
			}
		}
		for _, f := range slices.Sorted(maps.Keys(byFleet)) {
			out = append(out, *byFleet[f])
		}
	}
	return out, nil
}

// merge makes one logical run of rows: an unsharded run's one row as it
// is, or a sharded run's rows (ordered by id).
func merge(rows []Run) (Run, error) {
	if len(rows) == 0 {
		return Run{}, ErrNoRun
	}
	first := rows[0]
	if len(rows) == 1 && first.Name == "" {
		return first, nil
	}
	n := 0
	byShard := map[int]Run{}
	for _, r := range rows {
		n = max(n, r.shards)
		byShard[r.shard] = r
	}
	out := Run{ID: first.ID, StartedAt: first.StartedAt, Version: first.Version, Command: first.Command, Name: first.Name}
	var writers, problems []string
	var complete []Run
	state := Complete
	for i := 1; i <= n; i++ {
		r, ok := byShard[i]
		sh := Shard{Shard: i, State: Missing}
		if ok {
			sh = Shard{Shard: i, ID: r.ID, State: r.State, Error: r.Error, Writer: r.Writer, Hosts: r.Hosts}
			if r.StartedAt.Before(out.StartedAt) {
				out.StartedAt = r.StartedAt
			}
			if !slices.Contains(writers, r.Writer) {
				writers = append(writers, r.Writer)
			}
		}
		out.Shards = append(out.Shards, sh)
		switch sh.State {
		case Complete:
			complete = append(complete, r)
			continue
		case Missing:
			problems = append(problems, fmt.Sprintf("shard %d/%d missing: no runner has recorded it", i, n))
		case Failed:
			problems = append(problems, fmt.Sprintf("shard %d/%d failed: %s", i, n, r.Error))
			state = Failed
		default:
			problems = append(problems, fmt.Sprintf("shard %d/%d incomplete: its writer %s stopped or is still running", i, n, r.Writer))
		}
		if state != Failed {
			state = Incomplete
		}
	}
	out.State, out.Writer = state, strings.Join(writers, ", ")
	if state != Complete {
		out.Error = strings.Join(problems, "; ")
		return out, nil
	}
	res := &audit.Result{}
	for i, r := range complete {
		out.Hosts += r.Hosts
		out.Audited += r.Audited
		out.Unread += r.Unread
		out.Findings += r.Findings
		if r.FinishedAt != nil && (out.FinishedAt == nil || r.FinishedAt.After(*out.FinishedAt)) {
			out.FinishedAt = r.FinishedAt
		}
		if r.Catalog != "" && !slices.Contains(out.catalogs, r.Catalog) {
			out.catalogs = append(out.catalogs, r.Catalog)
		}
		var part audit.Result
		if err := json.Unmarshal(r.Result, &part); err != nil {
			return Run{}, fmt.Errorf("run %d: its result: %w", r.ID, err)
		}
		if i == 0 {
			*res = part
			continue
		}
		addResult(res, &part)
	}
	if len(out.catalogs) > 0 {
		out.Catalog = out.catalogs[0]
	}
	b, err := json.Marshal(res)
	if err != nil {
		return Run{}, err
	}
	out.Result = b
	return out, nil
}

// addResult adds a shard's result document (errors, summary, waivers)
// to a.
func addResult(a, b *audit.Result) {
	a.Errors = append(a.Errors, b.Errors...)
	sa, sb := &a.Summary, b.Summary
	sa.Hosts += sb.Hosts
	sa.Audited += sb.Audited
	sa.Unread += sb.Unread
	sa.Findings += sb.Findings
	sa.RulesSkipped = addCounts(sa.RulesSkipped, sb.RulesSkipped)
	sa.BySeverity = addCounts(sa.BySeverity, sb.BySeverity)
	if sa.Fleets == nil && len(sb.Fleets) > 0 {
		sa.Fleets = map[string]audit.FleetSummary{}
	}
	for name, f := range sb.Fleets {
		x := sa.Fleets[name]
		x.Hosts += f.Hosts
		x.BySeverity = addCounts(x.BySeverity, f.BySeverity)
		sa.Fleets[name] = x
	}
	switch {
	case b.Waivers == nil:
	case a.Waivers == nil:
		a.Waivers = b.Waivers
	default:
		// One waivers file: a waiver is stale only where no shard
		// matched it.
		wa, wb := a.Waivers, b.Waivers
		wa.Waived += wb.Waived
		wa.Stale = 0
		for i := range wa.Waivers {
			if i < len(wb.Waivers) {
				wa.Waivers[i].Matched += wb.Waivers[i].Matched
				if wa.Waivers[i].State == waivers.Stale && wb.Waivers[i].State != waivers.Stale {
					wa.Waivers[i].State = wb.Waivers[i].State
				}
			}
			if wa.Waivers[i].State == waivers.Stale {
				wa.Stale++
			}
		}
	}
}

func addCounts(a, b map[string]int) map[string]int {
	if a == nil && len(b) > 0 {
		a = map[string]int{}
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}

// loadCatalog reads a complete run's catalog: a sharded run's is its
// shards' merged (a fleet a shard had no host of may be missing from its
// own). nil when the run has none.
func loadCatalog(ctx context.Context, s Store, run Run) (*Catalog, error) {
	hashes := run.catalogs
	if len(hashes) == 0 && run.Catalog != "" {
		hashes = []string{run.Catalog}
	}
	var out *Catalog
	for _, h := range hashes {
		body, err := s.Blob(ctx, h)
		if err != nil {
			return nil, err
		}
		var cat Catalog
		if err := json.Unmarshal(body, &cat); err != nil {
			return nil, fmt.Errorf("run %d: its catalog: %w", run.ID, err)
		}
		if out == nil {
			out = &cat
			continue
		}
		for _, r := range cat.Rules {
			if !slices.ContainsFunc(out.Rules, func(x policies.Rule) bool { return x.ID == r.ID }) {
				out.Rules = append(out.Rules, r)
			}
		}
		if out.FleetRules == nil && len(cat.FleetRules) > 0 {
			out.FleetRules = map[string][]string{}
		}
		for f, ids := range cat.FleetRules {
			for _, id := range ids {
				if !slices.Contains(out.FleetRules[f], id) {
					out.FleetRules[f] = append(out.FleetRules[f], id)
				}
			}
		}
	}
	return out, nil
}

// Unfinished are the sharded runs after id that are not complete: what a
// report or drift of the latest complete run leaves out, for a warning.
func Unfinished(ctx context.Context, s Store, after RunID) ([]Run, error) {
	runs, err := s.Runs(ctx, RunQuery{})
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, r := range runs {
		if r.ID > after && r.Name != "" && r.State != Complete {
			out = append(out, r)
		}
	}
	return out, nil
}

// physicalRun is one row of runs: a run, or one shard of a sharded run.
func (s *DB) physicalRun(ctx context.Context, id RunID) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("store %s: run %d: %w", s.path, id, ErrNoRun)
	}
	if err != nil {
		return Run{}, fmt.Errorf("store %s: run %d: %w", s.path, id, err)
	}
	return r, nil
}
