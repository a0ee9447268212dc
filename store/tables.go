package store

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
)

// historySeverities are the history table's columns, in report order.
var historySeverities = []string{"critical", "high", "medium", "low", "info"}

func runLabel(r Run) string {
	if r.Name != "" {
		return fmt.Sprintf("run %d %s (%s UTC)", r.ID, r.Name, r.StartedAt.UTC().Format("2006-01-02 15:04:05"))
	}
	return fmt.Sprintf("run %d (%s UTC)", r.ID, r.StartedAt.UTC().Format("2006-01-02 15:04:05"))
}

// DriftTable writes what changed between two recorded runs, host by host,
// for a terminal of width columns.
func DriftTable(w io.Writer, d *Drift, width int) error {
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
		case HostAdded:
			title += ": only in the later run"
		case HostRemoved:
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
					reports.Escape(factValue(c.Before, c.Change == FactNotCollected && c.NotCollectedIn == "from")),
					reports.Escape(factValue(c.After, c.Change == FactNotCollected && c.NotCollectedIn == "to")),
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
func setBy(c FactChange) string {
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

// HistoryTable writes the runs of a store's history, one row per run and
// fleet with its findings by severity, for a terminal of width columns.
func HistoryTable(w io.Writer, h *History, width int) error {
	if len(h.Runs) == 0 {
		_, err := fmt.Fprintln(w, "No runs recorded (in this window). Record one with 'fleetaudit audit --record'.")
		return err
	}
	header := []string{"RUN", "STARTED (UTC)", "STATE", "FLEET", "HOSTS"}
	for _, s := range historySeverities {
		header = append(header, strings.ToUpper(s))
	}
	header = append(header, "WAIVED")
	cols := reports.Columns{Header: header, Width: width, MinLast: 6}
	var notes []string
	for _, r := range h.Runs {
		id := strconv.FormatInt(int64(r.ID), 10)
		started := r.StartedAt.UTC().Format("2006-01-02 15:04:05")
		switch {
		case r.Name != "" && r.State == Complete:
			note := fmt.Sprintf("run %s is %s, recorded in %d shards by %s", id, r.Name, len(r.Shards), r.Writer)
			for _, sh := range r.Shards {
				if sh.Hosts == 0 {
					// Its runner may have read no inventory: its hosts are
					// absent from the run, not clean.
					note += fmt.Sprintf("; shard %d/%d (%s) recorded no hosts", sh.Shard, len(r.Shards), sh.Writer)
				}
			}
			notes = append(notes, note)
		case r.State == Complete:
		case r.Name != "":
			notes = append(notes, fmt.Sprintf("run %s (%s) is %s: its %d shards are not all recorded, so none of its hosts or findings are counted: %s", id, r.Name, r.State, len(r.Shards), r.Error))
		case r.State == Incomplete:
			notes = append(notes, fmt.Sprintf("run %s is incomplete: its writer %s stopped before it finished, or is still running; its hosts and findings are not recorded", id, r.Writer))
		case r.State == Failed:
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
			for _, s := range historySeverities {
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
