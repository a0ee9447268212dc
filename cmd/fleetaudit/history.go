package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/store"
)

// severities in report order.
var severities = []string{"critical", "high", "medium", "low", "info"}

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
		return a.historyTable(w, h, out)
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

func (a *app) historyTable(w io.Writer, h *store.History, out string) error {
	if len(h.Runs) == 0 {
		_, err := fmt.Fprintln(w, "No runs recorded (in this window). Record one with 'fleetaudit audit --record'.")
		return err
	}
	header := []string{"RUN", "STARTED (UTC)", "STATE", "FLEET", "HOSTS"}
	for _, s := range severities {
		header = append(header, strings.ToUpper(s))
	}
	header = append(header, "WAIVED")
	cols := reports.Columns{Header: header, Width: a.humanOptions(out).Width, MinLast: 6}
	var notes []string
	for _, r := range h.Runs {
		id := strconv.FormatInt(int64(r.ID), 10)
		started := r.StartedAt.UTC().Format("2006-01-02 15:04:05")
		switch r.State {
		case store.Complete:
		case store.Incomplete:
			notes = append(notes, fmt.Sprintf("run %s is incomplete: its writer %s stopped before it finished, or is still running; its hosts and findings are not recorded", id, r.Writer))
		case store.Failed:
			notes = append(notes, fmt.Sprintf("run %s failed: %s", id, r.Error))
		}
		if len(r.Fleets) == 0 {
			cols.Rows = append(cols.Rows, []string{id, started, r.State, "-", "-", "", "", "", "", "", ""})
			continue
		}
		for i, f := range r.Fleets {
			row := []string{"", "", "", reports.Escape(fleetName(f.Fleet)), strconv.Itoa(f.Hosts)}
			if i == 0 {
				row[0], row[1], row[2] = id, started, r.State
			}
			for _, s := range severities {
				row = append(row, strconv.Itoa(f.BySeverity[s]))
			}
			row = append(row, strconv.Itoa(f.Waived))
			cols.Rows = append(cols.Rows, row)
		}
	}
	if err := cols.Write(w); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintf(w, "\n%s\n", strings.Join(reports.Wrap(reports.Escape(n), cols.Width), "\n")); err != nil {
			return err
		}
	}
	return nil
}

// fleetName shows the fleet of hosts that matched none.
func fleetName(f string) string {
	if f == "" {
		return "(no fleet)"
	}
	return f
}
