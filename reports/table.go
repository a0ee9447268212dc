package reports

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// tableRenderer prints one section per fleet, most severe first, each
// finding with the file and line that set the value it is about.
type tableFormat struct{}

func (tableFormat) Name() string       { return "table" }
func (tableFormat) Streams() bool      { return true }
func (tableFormat) NeedsCatalog() bool { return false }
func (tableFormat) Compliance() bool   { return false }

var severityColor = map[string]string{
	policies.SeverityCritical: "\x1b[1;31m",
	policies.SeverityHigh:     "\x1b[31m",
	policies.SeverityMedium:   "\x1b[33m",
	policies.SeverityLow:      "\x1b[36m",
}

func (tableFormat) Render(w io.Writer, r *audit.Result, opts Options) error {
	width := opts.Width
	if width <= 0 {
		width = DefaultWidth
	}
	names := make([]string, 0, len(r.Summary.Fleets))
	for name := range r.Summary.Fleets {
		names = append(names, name)
	}
	slices.Sort(names)
	mode := groupMode(opts.GroupBy, r.Summary.Hosts)
	// Findings come by fleet: a fleet's section is written once its
	// findings are read, so one fleet's findings are held at a time, and
	// in the grouped view only what the rows show.
	var out bytes.Buffer
	var cur *tableSection
	next := 0
	// emit writes the sections of the fleets before limit (all: the rest).
	emit := func(limit string, all bool) error {
		for ; next < len(names) && (all || names[next] < limit); next++ {
			sec := &tableSection{fleet: names[next]}
			if cur != nil && cur.fleet == names[next] {
				sec = cur
			}
			if next > 0 {
				out.WriteString("\n")
			}
			if err := sec.render(&out, r.Summary.Fleets[sec.fleet], mode, width, opts.Color); err != nil {
				return err
			}
			if _, err := w.Write(out.Bytes()); err != nil {
				return err
			}
			out.Reset()
		}
		return nil
	}
	for f, shared := range r.All() {
		if cur == nil || f.Fleet != cur.fleet {
			if err := emit(f.Fleet, false); err != nil {
				return err
			}
			cur = &tableSection{fleet: f.Fleet}
		}
		cur.add(f, shared, mode)
	}
	if err := emit("", true); err != nil {
		return err
	}
	tableWaivers(&out, r.Waivers, width)
	if len(r.Errors) > 0 {
		fmt.Fprintf(&out, "\nCould not audit in full:\n")
		for _, e := range r.Errors {
			who := e.Host
			if who == "" {
				who = e.Source
			}
			hanging(&out, Escape(who)+": "+Escape(e.Error), "  ", width)
		}
	}
	if lines := skippedLines(r); len(lines) > 0 {
		out.WriteString("\n")
		for _, l := range lines {
			hanging(&out, Escape(l), "  ", width)
		}
	}
	unread := ""
	if r.Summary.Unread > 0 {
		unread = fmt.Sprintf(", %d not read (see errors)", r.Summary.Unread)
	}
	waived := ""
	if r.Waivers != nil && r.Waivers.Waived > 0 {
		waived = fmt.Sprintf(" (%d waived)", r.Waivers.Waived)
	}
	fmt.Fprintf(&out, "\n%d %s audited%s, %d %s: %s%s\n", r.Summary.Audited, plural(r.Summary.Audited, "host", "hosts"), unread,
		r.Summary.Findings, plural(r.Summary.Findings, "finding", "findings"), countLine(r.Summary.BySeverity), waived)
	_, err := w.Write(out.Bytes())
	return err
}

// tableSection is one fleet's findings as its section needs them.
type tableSection struct {
	fleet string
	// findings (one row each), or in the grouped view the rule groups.
	findings []policies.Finding
	groups   ruleGroups
	findingCounts
}

// add takes one finding, valid during the call only, and what
// audit.Result.All yields with it.
func (s *tableSection) add(f, shared *policies.Finding, mode string) {
	s.count(f)
	if mode == GroupRule {
		s.groups.add(f, shared)
		return
	}
	s.findings = append(s.findings, *f)
}

func (s *tableSection) render(out *bytes.Buffer, fs audit.FleetSummary, mode string, width int, color bool) error {
	label := Escape(s.fleet)
	if label == "" {
		label = "(no fleet)"
	}
	counts := countLine(fs.BySeverity)
	if s.waived > 0 {
		counts = countLine(s.unwaived) + fmt.Sprintf(", %d waived", s.waived)
	}
	fmt.Fprintf(out, "== %s: %d %s, %s\n", label, fs.Hosts, plural(fs.Hosts, "host", "hosts"), counts)
	if s.n == 0 {
		return nil
	}
	switch mode {
	case GroupRule:
		return renderRuleGroups(out, s.groups.sorted(), width, color)
	case GroupHost:
		hosts, by := groupByHost(s.findings)
		for _, h := range hosts {
			fmt.Fprintf(out, "-- %s: %s\n", Escape(h), countLine(unwaivedCounts(by[h])))
			if err := renderFindings(out, by[h], width, color, false); err != nil {
				return err
			}
		}
		return nil
	}
	return renderFindings(out, s.findings, width, color, true)
}

// renderFindings prints SEVERITY, HOST (when withHost) and FINDING columns,
// wrapping long words (a library path, a host name) instead of cutting them.
func renderFindings(out *bytes.Buffer, findings []policies.Finding, width int, color, withHost bool) error {
	cols := Columns{Width: width, Indent: " ", Header: []string{"SEVERITY", "FINDING"}}
	if withHost {
		cols.Header = []string{"SEVERITY", "HOST", "FINDING"}
	}
	for _, f := range findings {
		finding := Escape(f.Rule) + ": " + Escape(f.Message)
		if where := provenance(f); where != "" {
			finding += "\nat " + Escape(where)
		}
		if o := f.SeverityOverride; o != nil {
			finding += fmt.Sprintf("\nseverity set by profile %s (rule: %s)", Escape(o.Profile), Escape(o.RuleSeverity))
		}
		sev := Escape(f.Severity)
		if f.Waived != nil {
			finding += "\n" + Escape(waivedLine(f.Waived))
			sev += "\nwaived"
		}
		row := []string{sev, Escape(f.Host), finding}
		if !withHost {
			row = []string{sev, finding}
		}
		cols.Rows = append(cols.Rows, row)
	}
	var buf bytes.Buffer
	if err := cols.Write(&buf); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if color {
			line = colorize(line)
		}
		out.WriteString(line)
	}
	return nil
}

// provenance is where the value a finding is about was set: the first cited
// configuration file or default, else the first source at all (/proc, /sys).
func provenance(f policies.Finding) string {
	first := ""
	for _, e := range f.Evidence {
		switch {
		case e.Source == "":
		case !strings.HasPrefix(e.Source, "/proc/") && !strings.HasPrefix(e.Source, "/sys/"):
			return e.Source
		case first == "":
			first = e.Source
		}
	}
	return first
}

// colorize colours the severity that starts a row. Only the severity
// column counts: a wrapped message line may start with "low" too.
func colorize(line string) string {
	for sev, code := range severityColor {
		if rest, ok := strings.CutPrefix(line, " "+sev); ok && (rest == "" || rest[0] == ' ') {
			return " " + code + sev + "\x1b[0m" + rest
		}
	}
	return line
}

func countLine(bySeverity map[string]int) string {
	var parts []string
	for _, sev := range []string{policies.SeverityCritical, policies.SeverityHigh, policies.SeverityMedium, policies.SeverityLow, policies.SeverityInfo} {
		if n := bySeverity[sev]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, sev))
		}
	}
	if len(parts) == 0 {
		return "no findings"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// renderRuleGroups prints one row per rule: the hosts folded, the distinct
// values of the facts it cites counted, and where they were set.
func renderRuleGroups(out *bytes.Buffer, groups []*ruleGroup, width int, color bool) error {
	cols := Columns{Width: width, Indent: " ", Header: []string{"SEVERITY", "HOSTS", "FINDING"}}
	for _, g := range groups {
		text := Escape(g.Rule) + ": " + Escape(g.Title)
		if mix := mixLine(g.Open); mix != "" {
			text += "\n" + mix
		}
		for _, line := range valuesLines(g.factValues(), 3, 3) {
			text += "\n" + Escape(line)
		}
		if src := sourcesLine(g.sourceCounts()); src != "" {
			text += "\nat " + Escape(src)
		}
		sev := Escape(g.Severity)
		if g.Waived > 0 {
			text += fmt.Sprintf("\n%d of %d waived", g.Waived, g.N)
		}
		hosts := fmt.Sprintf("%d: %s", g.Hosts.Len(), Escape(g.Hosts.fold(6)))
		cols.Rows = append(cols.Rows, []string{sev, hosts, text})
	}
	var buf bytes.Buffer
	if err := cols.Write(&buf); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if color {
			line = colorize(line)
		}
		out.WriteString(line)
	}
	return nil
}

// tableWaivers lists the waivers that need attention.
func tableWaivers(out *bytes.Buffer, rep *waivers.Report, width int) {
	notices := waiverNotices(rep)
	if len(notices) == 0 {
		return
	}
	out.WriteString("\nWaivers to review:\n")
	for _, n := range notices {
		hanging(out, Escape(n), "  ", width)
	}
}

// unwaivedCounts counts findings by severity, waived ones left out.
func unwaivedCounts(findings []policies.Finding) map[string]int {
	out := map[string]int{}
	for _, f := range findings {
		if f.Waived == nil {
			out[f.Severity]++
		}
	}
	return out
}

// gateTable is for a terminal or a CI log: one section per fleet the change
// reaches, introduced findings in full, resolved ones in full, unchanged
// ones counted.
func (tableFormat) RenderGate(w io.Writer, r *configrepo.Result, opts Options) error {
	width := opts.Width
	if width <= 0 {
		width = DefaultWidth
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "gate %s -> %s\n", refLabel(r.Base), refLabel(r.Head))
	for _, f := range r.Fleets {
		out.WriteString("\n")
		fmt.Fprintf(&out, "== %s: %s\n", fleetHeading(f), fleetCounts(f))
		for _, c := range f.Changed {
			hanging(&out, "changed "+Escape(c), "   ", width)
		}
		for _, part := range changeParts(f) {
			fmt.Fprintf(&out, "-- %s\n", part.title)
			if err := renderFindings(&out, part.findings, width, opts.Color, false); err != nil {
				return err
			}
		}
	}
	for _, w := range r.Warnings {
		out.WriteString("\n")
		hanging(&out, "warning: "+Escape(w), "", width)
	}
	tableWaivers(&out, r.Waivers, width)
	if len(r.Errors) > 0 {
		out.WriteString("\nCould not gate in full:\n")
		for _, e := range r.Errors {
			hanging(&out, Escape(e.Fleet)+" at "+Escape(e.Ref)+": "+Escape(e.Error), "  ", width)
		}
	}
	fmt.Fprintf(&out, "\n%s\n", blastRadius(r))
	fmt.Fprintf(&out, "%d introduced (%s), %d resolved, %d unchanged\n", r.Summary.Introduced,
		countLine(r.Summary.IntroducedBySeverity), r.Summary.Resolved, r.Summary.Unchanged)
	if r.Plan != nil {
		tablePlan(&out, r.Plan, width)
	}
	_, err := w.Write(out.Bytes())
	return err
}
