package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/store"
)

func newPruneCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prune --older-than AGE",
		Short: "Remove old runs from the history store, and the snapshots and findings only they used",
		Long: `prune removes the runs that started before --older-than, with their hosts, findings and
trend points, then every stored snapshot and finding that no remaining run uses, in one
transaction. The newest --keep complete runs stay whatever their age, so drift and the
trend keep a last point. A run still being written (incomplete, started within
--writer-timeout) is never removed, and while one exists no snapshot is removed either:
its writer stores them before it references them.

The file does not shrink: SQLite reuses the freed space for later runs. Compliance reports
over a window need the runs in it: prune to a horizon longer than your longest report.`,
		Example: `  # What pruning to six months would remove
  fleetaudit history prune --older-than 180d --dry-run

  # Keep a year, and at least the last 30 runs
  fleetaudit history prune --older-than 365d --keep 30

  # Before a date, as JSON for a log
  fleetaudit history prune --older-than 2026-06-01 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runPrune(cmd) },
	}
	f := cmd.Flags()
	addStoreFlag(f)
	addHistoryOutputFlags(f)
	f.String("older-than", "", "remove runs started before this: an age (180d, 26w, 720h) or a date (2026-06-01); required")
	f.Int("keep", 1, "always keep the newest N complete runs, whatever their age")
	f.Bool("dry-run", false, "say what would be removed, change nothing")
	f.Duration("writer-timeout", 24*time.Hour, "an incomplete run younger than this may still be writing: keep it and its snapshots")
	return cmd
}

func (a *app) runPrune(cmd *cobra.Command) error {
	format, err := a.tableOrJSON()
	if err != nil {
		return err
	}
	age := a.v.GetString("older-than")
	if age == "" {
		return usageError{fmt.Errorf("--older-than is required: say how old a run must be to go (e.g. --older-than 180d)")}
	}
	before, err := parseTimeBack("--older-than", age, time.Now())
	if err != nil {
		return err
	}
	keep := a.v.GetInt("keep")
	if keep < 0 {
		return usageError{fmt.Errorf("--keep %d: want 0 or more", keep)}
	}
	live := a.v.GetDuration("writer-timeout")
	if live < 0 {
		return usageError{fmt.Errorf("--writer-timeout %s: want 0 or more", live)}
	}
	out := a.v.GetString("output")
	s, err := a.openStore(cmd.Context(), out, store.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.Prune(cmd.Context(), store.PruneOptions{Before: before, Keep: keep, LiveFor: live, DryRun: a.v.GetBool("dry-run")})
	if err != nil {
		return storeErr(err)
	}
	a.log.Info("pruned", "store", s.Path(), "runs", len(res.Runs), "blobs", res.Blobs, "dry_run", res.DryRun)
	return writeOutputWith(cmd.Context(), a, out, func(w io.Writer) error {
		if format == "json" {
			return writeJSON(w, res)
		}
		_, err := fmt.Fprintln(w, res.String())
		return err
	})
}
