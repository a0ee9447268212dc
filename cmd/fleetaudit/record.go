package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/sshsource"
	"github.com/fleetaudit/fleetaudit/store"
)

// addRecordFlags adds audit's --record and --store.
func addRecordFlags(f *pflag.FlagSet) {
	f.Bool("record", false, "record the run (hosts, snapshots, findings) in the history store, for history, drift and report")
	f.String("run", "", "with --record and --shard: the name of the run this runner records its shard of (the same on every runner, e.g. nightly-2026-12-07); readers see the run once every shard is recorded")
	addStoreFlag(f)
}

// addStoreFlag adds --store and --store-wait, meaning the same in audit,
// history, drift, report and prune.
func addStoreFlag(f *pflag.FlagSet) {
	f.String("store", "", "history store: an SQLite file (default $XDG_DATA_HOME/fleetaudit/store.db, else ~/.local/share/fleetaudit/store.db) or a PostgreSQL database, postgres://user@host/db (password from PGPASSWORD or PGPASSFILE)")
	f.Duration("store-wait", store.DefaultWait, "how long a write to the store waits while another process writes to it (readers never wait)")
}

// storePath is --store, else the default under $XDG_DATA_HOME.
func (a *app) storePath() (string, error) {
	if p := a.v.GetString("store"); p != "" {
		return p, nil
	}
	dir := a.getenv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		// The XDG base directory spec: a relative path is invalid, ignore it.
		home := a.getenv("HOME")
		if home == "" {
			return "", usageError{fmt.Errorf("no --store given, and neither $XDG_DATA_HOME nor $HOME is set to find the default store")}
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "fleetaudit", "store.db"), nil
}

// openStoreToRead opens an existing store read-only, for a command whose
// report goes to out: it reads while another process writes, and never
// creates a store.
func (a *app) openStoreToRead(ctx context.Context, out string) (*store.DB, error) {
	return a.openStore(ctx, out, store.Options{ReadOnly: true})
}

// openStore opens the store for a command whose report goes to out,
// refusing an out that names the store (or its -wal and -shm files), even
// one that does not exist yet.
func (a *app) openStore(ctx context.Context, out string, opts store.Options) (*store.DB, error) {
	path, err := a.storePath()
	if err != nil {
		return nil, err
	}
	if err := checkOutput(out, storeInputs(path)); err != nil {
		return nil, err
	}
	wait := a.v.GetDuration("store-wait")
	if wait <= 0 {
		return nil, usageError{fmt.Errorf("--store-wait %s: want a positive duration", wait)}
	}
	opts.Version, opts.Wait = version, wait
	s, err := store.Open(ctx, path, opts)
	return s, storeErr(err)
}

// storeInputs are the store's file and SQLite's files beside it (none for
// a PostgreSQL URL).
func storeInputs(path string) []input {
	if store.IsURL(path) {
		return nil
	}
	return inputsOf("--store", []string{path, path + "-wal", path + "-shm", path + "-journal"}, 0)
}

// storeErr says how to wait longer for a store another process writes to.
func storeErr(err error) error {
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%w (--store-wait sets how long to wait)", err)
	}
	return err
}

// recording is audit --record: the run is begun before the audit (so a
// store that cannot be opened fails fast, and snapshots are stored as the
// engine reads them) and finished after it. A nil recording does nothing.
type recording struct {
	s   *store.DB
	rec *store.Recorder
}

// startRecord begins a recorded run when --record is given, hooking the
// recorder into opts.Loaded.
func (a *app) startRecord(ctx context.Context, opts *audit.Options) (*recording, error) {
	name, shard := a.v.GetString("run"), a.v.GetString("shard")
	if !a.v.GetBool("record") {
		if name != "" {
			return nil, usageError{fmt.Errorf("--run names the run --record keeps; add --record, or drop --run")}
		}
		return nil, nil
	}
	meta := store.RunMeta{Name: name}
	if shard != "" {
		// A shard recorded as a run of its own would read as the whole
		// fleet with the other shards' hosts gone.
		if name == "" {
			return nil, usageError{fmt.Errorf("--shard with --record needs --run NAME: the run every shard records into")}
		}
		if len(opts.Roots) > 0 {
			return nil, usageError{fmt.Errorf("--root hosts are not split by --shard: record them in a run of their own")}
		}
		sh, err := sshsource.ParseShard(shard)
		if err != nil {
			return nil, usageError{fmt.Errorf("--shard: %w", err)}
		}
		meta.Shard, meta.Shards = sh.Index, sh.Count
	}
	s, err := a.openStore(ctx, a.v.GetString("output"), store.Options{Create: true})
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	meta.StartedAt, meta.Version, meta.Writer = time.Now(), version, host+":"+strconv.Itoa(os.Getpid())
	// Not the command line: its values could hold what should not be
	// kept.
	meta.Command = "audit"
	rec, err := store.Begin(ctx, s, meta)
	if err != nil {
		s.Close()
		return nil, storeErr(err)
	}
	prev := opts.Loaded
	opts.Loaded = func(in fleetrun.HostInput, doc, like map[string]any) {
		if prev != nil {
			prev(in, doc, like)
		}
		rec.Loaded(in, doc, like)
	}
	return &recording{s: s, rec: rec}, nil
}

// fail marks the run failed: the audit could not be made.
func (r *recording) fail(ctx context.Context, cause error) {
	if r == nil {
		return
	}
	defer r.s.Close()
	// The audit's error is what the caller reports; this one is secondary.
	_ = r.rec.Fail(context.WithoutCancel(ctx), cause)
}

// finish records the audit's hosts, findings and trend (waivers applied).
func (r *recording) finish(ctx context.Context, a *app, res *audit.Result, at time.Time) error {
	if r == nil {
		return nil
	}
	defer r.s.Close()
	id := r.rec.ID()
	// The compliance report's trend points, read from the findings as
	// they stream (NewCompliance would need them collected).
	trend := reports.CurrentTrend(res, catalogOf(res), reports.RunInfo{ID: strconv.FormatInt(int64(id), 10), At: at})
	// A signal stops the audit, not the write that records it: the run is
	// one transaction either way, and an interrupted one stays incomplete.
	if err := r.rec.Finish(context.WithoutCancel(ctx), res, trend); err != nil {
		return storeErr(err)
	}
	added, reused := r.rec.Stored()
	a.log.Info("recorded", "run", id, "store", r.s.Path(), "snapshots_new", added, "snapshots_unchanged", reused)
	return nil
}

// catalogOf is the reports' catalog from what the engine ran: the rules'
// metadata and each fleet's rules (collection-error is no control).
func catalogOf(res *audit.Result) *reports.Catalog {
	cat := &reports.Catalog{Rules: map[string]policies.Rule{}, FleetRules: map[string][]string{}}
	for _, r := range res.Rules {
		if r.ID != policies.CollectionErrorRule {
			cat.Rules[r.ID] = r
		}
	}
	for fleet, ids := range res.FleetRules {
		cat.FleetRules[fleet] = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == policies.CollectionErrorRule })
	}
	return cat
}

// parseSince reads --since: a duration back from now (30d, 12h, 2w, or
// any Go duration) or a date (2026-11-01) or RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) { return parseTimeBack("--since", s, now) }

// parseTimeBack reads a flag giving a point in the past, as --since.
func parseTimeBack(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			if v, err := strconv.Atoi(n); err == nil && v >= 0 {
				return now.Add(-time.Duration(v) * unit), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageError{fmt.Errorf("%s %q: want a duration back from now (30d, 2w, 12h) or a date (2026-11-01)", flag, s)}
}
