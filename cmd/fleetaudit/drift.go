package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
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
	d, err := store.Compute(ctx, s, store.DriftQuery{From: from, To: to, Hosts: a.v.GetStringSlice("host"), Fleet: a.v.GetString("fleet")})
	if err != nil {
		return usageError{err}
	}
	return writeOutputWith(ctx, a, out, func(w io.Writer) error {
		if format == "json" {
			return writeJSON(w, d)
		}
		return driftTable(w, d, a.humanOptions(out).Width)
	})
}

func runLabel(r store.Run) string {
	return fmt.Sprintf("run %d (%s UTC)", r.ID, r.StartedAt.UTC().Format("2006-01-02 15:04:05"))
}

func driftTable(w io.Writer, d *store.Drift, width int) error {
	s := d.Summary
	head := fmt.Sprintf("Drift from %s to %s: %d hosts, %d changed, %d unchanged, %d added, %d removed, %d not read in one run; %d fact changes; findings %d new, %d resolved, %d still open, %d unknown.",
		runLabel(d.From), runLabel(d.To), s.Hosts, s.Changed, s.Unchanged, s.Added, s.Removed, s.Unread, s.Facts, s.New, s.Resolved, s.Open, s.Unknown)
	if _, err := fmt.Fprintln(w, strings.Join(reports.Wrap(head, width), "\n")); err != nil {
		return err
	}
	for _, h := range d.Hosts {
		title := fmt.Sprintf("%s (%s): %s", h.Host, fleetName(h.Fleet), h.State)
		if h.FromFleet != "" {
			title += fmt.Sprintf(", fleet was %s", fleetName(h.FromFleet))
		}
		switch h.State {
		case store.HostAdded:
			title += ": only in the later run"
		case store.HostRemoved:
			title += ": not in the later run"
		}
		if _, err := fmt.Fprintf(w, "\n%s\n", reports.Escape(title)); err != nil {
			return err
		}
		if h.Unread != "" {
			if _, err := fmt.Fprint(w, indented(reports.Escape(h.Unread), width)); err != nil {
				return err
			}
		}
		if len(h.Facts) > 0 {
			cols := reports.Columns{Header: []string{"FACT", "CHANGE", "BEFORE", "AFTER", "SET BY"}, Indent: "  ", Width: width, MinLast: 20}
			for _, c := range h.Facts {
				cols.Rows = append(cols.Rows, []string{reports.Escape(c.Fact), c.Change,
					reports.Escape(factValue(c.Before, c.Change == store.FactNotCollected && c.NotCollectedIn == "from")),
					reports.Escape(factValue(c.After, c.Change == store.FactNotCollected && c.NotCollectedIn == "to")),
					reports.Escape(setBy(c))})
			}
			if err := cols.Write(w); err != nil {
				return err
			}
		}
		var rows [][]string
		for _, l := range []struct {
			name string
			fs   []policies.Finding
		}{{"new", h.New}, {"resolved", h.Resolved}, {"unknown", h.Unknown}} {
			for _, f := range l.fs {
				rows = append(rows, []string{l.name, f.Severity, reports.Escape(f.Rule), reports.Escape(f.Message)})
			}
		}
		if len(rows) > 0 {
			cols := reports.Columns{Header: []string{"FINDING", "SEVERITY", "RULE", "MESSAGE"}, Indent: "  ", Width: width, Unbroken: []bool{false, false, true}}
			cols.Rows = rows
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
			if err := cols.Write(w); err != nil {
				return err
			}
		}
		if len(h.Open) > 0 {
			text := fmt.Sprintf("still open: %d (%s)", len(h.Open), ruleCounts(h.Open))
			if _, err := fmt.Fprint(w, indented(reports.Escape(text), width)); err != nil {
				return err
			}
		}
	}
	if s.Unknown > 0 {
		note := "Unknown findings were in the earlier run, and the later run cannot say whether they still hold: the host was not read or not in it, the rule did not run there, or a fact the finding cites was not collected."
		if _, err := fmt.Fprintf(w, "\n%s\n", strings.Join(reports.Wrap(note, width), "\n")); err != nil {
			return err
		}
	}
	return nil
}

// indented wraps text to width, each line indented by two spaces.
func indented(text string, width int) string {
	var b strings.Builder
	for _, line := range reports.Wrap(text, max(width-2, 20)) {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// factValue shows a fact's value in the table: text as it is, anything
// else as JSON; nothing is "(absent)", or "(not collected)".
func factValue(v any, notCollected bool) string {
	switch {
	case notCollected:
		return "(not collected)"
	case v == nil:
		return "(absent)"
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return `""`
		}
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// setBy is the file that set the value, or before → after when it moved.
func setBy(c store.FactChange) string {
	switch {
	case c.BeforeSource == c.AfterSource:
		return c.AfterSource
	case c.BeforeSource == "":
		return c.AfterSource
	case c.AfterSource == "":
		return c.BeforeSource
	}
	return c.BeforeSource + " → " + c.AfterSource
}

// ruleCounts lists rules with their counts: "a ×2, b".
func ruleCounts(fs []policies.Finding) string {
	n := map[string]int{}
	for _, f := range fs {
		n[f.Rule]++
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(n)) {
		if n[r] > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", r, n[r]))
		} else {
			parts = append(parts, r)
		}
	}
	return strings.Join(parts, ", ")
}
