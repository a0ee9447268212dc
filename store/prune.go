package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PruneOptions says which runs Prune removes.
type PruneOptions struct {
	// Before: runs that started before it are removed...
	Before time.Time
	// Keep: ...except the newest Keep complete runs, whatever their age,
	// so that drift and the trend keep a last point.
	Keep int
	// LiveFor is how long an incomplete run may still have a writer: such
	// a run is never removed, and while one exists no blob is collected
	// (its writer stores snapshots before it references them).
	LiveFor time.Duration
	// DryRun counts what would go and changes nothing.
	DryRun bool
}

// PruneResult is what Prune removed (or, dry, would remove).
type PruneResult struct {
	Runs []RunID `json:"runs"`
	// Oldest and Newest are the start times of the removed runs.
	Oldest time.Time `json:"oldest,omitzero"`
	Newest time.Time `json:"newest,omitzero"`
	// Blobs no remaining run references, and their stored bytes.
	Blobs     int   `json:"blobs"`
	BlobBytes int64 `json:"blob_bytes"`
	// BlobsKeptFor names the incomplete run that kept blobs from being
	// collected; "" when they were.
	BlobsKeptFor string `json:"blobs_kept_for,omitempty"`
	DryRun       bool   `json:"dry_run"`
}

// Prune removes old runs (their hosts, findings and trend points go with
// them) and then every blob no remaining run references, in one
// transaction: a reader sees the store before or after, never between.
// The file does not shrink: SQLite reuses the freed pages for later runs
// (PostgreSQL's autovacuum does the same for its tables).
func (s *DB) Prune(ctx context.Context, opts PruneOptions) (PruneResult, error) {
	res := PruneResult{DryRun: opts.DryRun}
	if opts.Keep < 0 {
		return res, fmt.Errorf("store %s: pruning: keep %d: want 0 or more", s.path, opts.Keep)
	}
	fail := func(what string, err error) (PruneResult, error) {
		return PruneResult{}, fmt.Errorf("store %s: pruning: %s: %w", s.path, what, s.lockErr(err))
	}
	// Immediate (the DSN's _txlock): a writer that begins a run now waits
	// for this transaction, so every live writer is visible to it.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail("beginning", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.d.lockPrune(ctx, tx); err != nil {
		return fail("locking", err)
	}

	live := formatTime(timeNow().Add(-opts.LiveFor))
	// A sharded run is kept or removed whole.
	gs, err := groups(ctx, tx, live)
	if err != nil {
		return fail("choosing runs", err)
	}
	keep := map[RunID]bool{}
	byNewest := slices.Clone(gs)
	slices.SortFunc(byNewest, func(a, b *group) int { return cmp.Or(cmp.Compare(b.started, a.started), cmp.Compare(b.id, a.id)) })
	for _, g := range byNewest {
		if len(keep) == opts.Keep {
			break
		}
		if g.state == Complete {
			keep[g.id] = true
		}
	}
	var gone []*group
	for _, g := range gs {
		if g.started < formatTime(opts.Before) && !g.live && !keep[g.id] {
			gone = append(gone, g)
		}
	}
	slices.SortFunc(gone, func(a, b *group) int { return cmp.Or(cmp.Compare(a.started, b.started), cmp.Compare(a.id, b.id)) })
	var rows []RunID
	for _, g := range gone {
		t, err := parseTime(g.started)
		if err != nil {
			return fail(fmt.Sprintf("run %d: start time %q", g.id, g.started), err)
		}
		if len(res.Runs) == 0 {
			res.Oldest = t
		}
		res.Newest = t
		res.Runs = append(res.Runs, g.id)
		for _, m := range g.members {
			rows = append(rows, m.id)
		}
	}
	for chunk := range chunks(rows, 500) {
		in, args := placeholders(chunk)
		// The foreign keys cascade to run_hosts, findings and run_trend.
		if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id IN (`+in+`)`, args...); err != nil {
			return fail("removing runs", err)
		}
	}

	var liveID sql.NullInt64
	var liveStarted sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT id, started_at FROM runs WHERE state = ? AND started_at >= ? ORDER BY id LIMIT 1`,
		Incomplete, live).Scan(&liveID, &liveStarted)
	switch {
	case err == nil:
		res.BlobsKeptFor = fmt.Sprintf("run %d, incomplete since %s, may still be writing", liveID.Int64, liveStarted.String)
	case err != sql.ErrNoRows:
		return fail("looking for live writers", err)
	default:
		const unreferenced = `hash NOT IN (SELECT snapshot FROM run_hosts WHERE snapshot IS NOT NULL)
			AND hash NOT IN (SELECT finding FROM findings)
			AND hash NOT IN (SELECT catalog FROM runs WHERE catalog IS NOT NULL)`
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM blobs WHERE `+unreferenced).
			Scan(&res.Blobs, &res.BlobBytes); err != nil {
			return fail("counting unreferenced blobs", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM blobs WHERE `+unreferenced); err != nil {
			return fail("removing unreferenced blobs", err)
		}
	}
	if opts.DryRun {
		return res, nil
	}
	if err := tx.Commit(); err != nil {
		return fail("committing", err)
	}
	return res, nil
}

// chunks splits ids so that an IN list stays under SQLite's variable limit.
func chunks(ids []RunID, n int) func(func([]RunID) bool) {
	return func(yield func([]RunID) bool) {
		for len(ids) > 0 {
			k := min(n, len(ids))
			if !yield(ids[:k]) {
				return
			}
			ids = ids[k:]
		}
	}
}

// String is a one-line account for a terminal.
func (r PruneResult) String() string {
	var b strings.Builder
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	switch len(r.Runs) {
	case 0:
		fmt.Fprintf(&b, "no run to remove")
	case 1:
		fmt.Fprintf(&b, "%s run %d (started %s)", verb, r.Runs[0], r.Oldest.Format(time.DateTime))
	default:
		fmt.Fprintf(&b, "%s %d runs (%d..%d, started %s to %s)", verb, len(r.Runs), r.Runs[0], r.Runs[len(r.Runs)-1],
			r.Oldest.Format(time.DateTime), r.Newest.Format(time.DateTime))
	}
	if r.BlobsKeptFor != "" {
		fmt.Fprintf(&b, "; no blob collected: %s", r.BlobsKeptFor)
	} else {
		fmt.Fprintf(&b, "; %d unreferenced blobs (%s)", r.Blobs, byteSize(r.BlobBytes))
	}
	return b.String()
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
