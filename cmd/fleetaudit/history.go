package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/store"
)

func newHistoryCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List recorded audit runs with their findings per fleet and severity",
		Long: `history lists the runs 'fleetaudit audit --record' wrote to the store, newest first: when
each started, whether it completed (a run whose writer was killed or is still running is
incomplete; one whose audit failed says why), its hosts, and per fleet the hosts and the
findings by severity, with how many of them a waiver covers.`,
		Example: `  # The last 20 runs in the default store
  fleetaudit history

  # The last month, as JSON
  fleetaudit history --since 30d --format json

  # Another store
  fleetaudit history --store /var/lib/fleetaudit/store.db --limit 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runHistory(cmd) },
	}
	f := cmd.Flags()
	addStoreFlag(f)
	addHistoryOutputFlags(f)
	f.String("since", "", "only runs started since: a duration back from now (30d, 2w, 12h) or a date (2026-11-01)")
	f.Int("limit", 20, "at most this many runs, newest first (0: all)")
	cmd.AddCommand(newPruneCmd(a))
	return cmd
}

// addHistoryOutputFlags adds --format (table or json) and -o.
func addHistoryOutputFlags(f *pflag.FlagSet) {
	f.String("format", "table", "output format: table or json")
	f.StringP("output", "o", "-", "write to FILE (- for stdout): a file is replaced atomically keeping its mode")
}

// tableOrJSON checks --format for history and drift.
func (a *app) tableOrJSON() (string, error) {
	switch format := a.v.GetString("format"); format {
	case "table", "json":
		return format, nil
	default:
		return "", usageError{fmt.Errorf("--format %q: want table or json", format)}
	}
}

func (a *app) runHistory(cmd *cobra.Command) error {
	format, err := a.tableOrJSON()
	if err != nil {
		return err
	}
	since, err := parseSince(a.v.GetString("since"), time.Now())
	if err != nil {
		return err
	}
	limit := a.v.GetInt("limit")
	if limit < 0 {
		return usageError{fmt.Errorf("--limit %d: want 0 (all) or more", limit)}
	}
	out := a.v.GetString("output")
	s, err := a.openStoreToRead(cmd.Context(), out)
	if err != nil {
		return err
	}
	defer s.Close()
	h, err := store.LoadHistory(cmd.Context(), s, store.RunQuery{Since: since, Limit: limit})
	if err != nil {
		return err
	}
	return writeOutputWith(cmd.Context(), a, out, func(w io.Writer) error {
		if format == "json" {
			return writeJSON(w, h)
		}
		return store.HistoryTable(w, h, a.humanOptions(out).Width)
	})
}

// writeJSON writes v indented, control characters escaped.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(reports.EscapeJSON(buf.Bytes()))
	return err
}

// warnUnfinished says which sharded runs after the run read are left out
// because not every shard is recorded: their hosts are not in it, as
// clean or otherwise.
func (a *app) warnUnfinished(ctx context.Context, s store.Store, id store.RunID) {
	runs, err := store.Unfinished(ctx, s, id)
	if err != nil {
		a.log.Warn("listing unfinished sharded runs", "err", err)
		return
	}
	for _, r := range runs {
		a.log.Warn(fmt.Sprintf("run %d (%s) is left out: %s", r.ID, r.Name, r.Error), "run", r.ID, "name", r.Name, "state", r.State)
	}
}
