package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/store"
)

func newDriftCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "What changed on each host between two recorded runs: facts, and findings new, resolved and still open",
		Long: `drift compares two complete runs of the store host by host. For each host whose snapshot
changed it lists every fact whose value changed (before → after) with the file that set it on
each side, facts added or removed, and facts whose value stayed but is now set by another file.
It then matches the host's findings across the runs: new, resolved, still open.

It says only what the runs saw. A host not read in one run has no facts compared; a section a
run did not collect is "not collected", never "removed"; and a finding the later run could not
have reported (its host not read or not in the run, its rule not run, a fact it cites not
collected) is "unknown", never "resolved".

--to defaults to the latest complete run and --from to the complete run before --to. A run is
its id (see 'fleetaudit history'), latest, or latest~N (N complete runs before the latest).`,
		Example: `  # What changed since the run before the latest
  fleetaudit drift

  # One host between two runs
  fleetaudit drift --from 12 --to 15 --host gpu-a-001

  # A fleet's drift as JSON
  fleetaudit drift --fleet gpu-training --from latest~7 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runDrift(cmd) },
	}
	f := cmd.Flags()
	addStoreFlag(f)
	addHistoryOutputFlags(f)
	f.String("from", "", "the earlier run: an id, latest or latest~N (default: the complete run before --to)")
	f.String("to", "latest", "the later run: an id, latest or latest~N")
	f.StringSlice("host", nil, "only hosts matching this glob (repeatable)")
	f.String("fleet", "", "only hosts of this fleet (in either run)")
	return cmd
}

func (a *app) runDrift(cmd *cobra.Command) error {
	ctx := cmd.Context()
	format, err := a.tableOrJSON()
	if err != nil {
		return err
	}
	out := a.v.GetString("output")
	s, err := a.openStoreToRead(ctx, out)
	if err != nil {
		return err
	}
	defer s.Close()
	to, err := store.Resolve(ctx, s, a.v.GetString("to"))
	if err != nil {
		return usageError{fmt.Errorf("--to: %w", err)}
	}
	var from store.RunID
	if ref := a.v.GetString("from"); ref != "" {
		if from, err = store.Resolve(ctx, s, ref); err != nil {
			return usageError{fmt.Errorf("--from: %w", err)}
		}
	} else if from, err = store.Previous(ctx, s, to); err != nil {
		return usageError{fmt.Errorf("--from: %w", err)}
	}
	a.warnUnfinished(ctx, s, to)
	d, err := store.Compute(ctx, s, store.DriftQuery{From: from, To: to, Hosts: a.v.GetStringSlice("host"), Fleet: a.v.GetString("fleet")})
	if err != nil {
		return usageError{err}
	}
	return writeOutputWith(ctx, a, out, func(w io.Writer) error {
		if format == "json" {
			return writeJSON(w, d)
		}
		return store.DriftTable(w, d, a.humanOptions(out).Width)
	})
}
