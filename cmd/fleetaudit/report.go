package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/store"
)

func newReportCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write the compliance report of a recorded run, with the trend over earlier runs",
		Long: `report renders a run recorded with 'fleetaudit audit --record' (the latest complete one
unless --run says otherwise) as a compliance report: per fleet the pass rate of each control
(a rule, over the hosts it ran on), the trend of each fleet's pass rate over the complete runs
recorded since --since, what changed since the previous complete run (new and resolved
findings, facts changed with the file that set them, hosts added and gone), how long each
open finding has been open (from the runs since --since), the top hazards with their evidence
and the file that set each value, and the waivers with their owners and expiry. HTML is one self-contained file; Markdown suits
a wiki or a pull request.

Nothing is audited again: the report says what the run recorded, with the rules as they were
then.`,
		Example: `  # Last month's compliance report as one HTML file
  fleetaudit report --format html --since 30d -o compliance.html

  # An earlier run, as Markdown
  fleetaudit report --run 12 --format markdown -o report.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runReport(cmd) },
	}
	f := cmd.Flags()
	addStoreFlag(f)
	f.String("format", "html", "output format: "+orList(reports.ComplianceFormats()))
	f.StringP("output", "o", "-", "write the report to FILE (- for stdout): a file is replaced atomically keeping its mode")
	f.String("since", "30d", "trend over the complete runs started since: a duration back from now (30d, 2w) or a date (2026-11-01)")
	f.String("run", "latest", "the run reported: an id, latest or latest~N")
	return cmd
}

func (a *app) runReport(cmd *cobra.Command) error {
	ctx := cmd.Context()
	format := a.v.GetString("format")
	render, err := reports.Get(format)
	if err != nil || !render.Compliance() {
		return usageError{fmt.Errorf("--format %q: want %s", format, orList(reports.ComplianceFormats()))}
	}
	since, err := parseSince(a.v.GetString("since"), time.Now())
	if err != nil {
		return err
	}
	out := a.v.GetString("output")
	s, err := a.openStoreToRead(ctx, out)
	if err != nil {
		return err
	}
	defer s.Close()
	id, err := store.Resolve(ctx, s, a.v.GetString("run"))
	if err != nil {
		return usageError{fmt.Errorf("--run: %w", err)}
	}
	rep, err := store.LoadReportRun(ctx, s, id)
	if err != nil {
		return usageError{err}
	}
	res, run := rep.Result(), rep.Run()
	a.warnUnfinished(ctx, s, run.ID)
	earlier, err := s.Runs(ctx, store.RunQuery{Since: since, State: store.Complete})
	if err != nil {
		return err
	}
	var ids []store.RunID
	for _, r := range earlier {
		if r.ID < id {
			ids = append(ids, r.ID)
		}
	}
	points, err := s.Trend(ctx, ids)
	if err != nil {
		return err
	}
	opts := a.humanOptions(out)
	opts.Catalog = catalogOf(res)
	opts.Run = reports.RunInfo{ID: strconv.FormatInt(int64(run.ID), 10), At: run.StartedAt}
	opts.Trend = points
	if opts.Changes, err = rep.Changes(ctx, s); err != nil {
		return err
	}
	if opts.Seen, err = rep.FirstSeen(ctx, s, since); err != nil {
		return err
	}
	return writeOutputWith(ctx, a, out, func(w io.Writer) error {
		if err := render.Render(w, res, opts); err != nil {
			return fmt.Errorf("rendering %s: %w", format, err)
		}
		return nil
	})
}

// orList joins values as a sentence does: "a", "a or b", "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
