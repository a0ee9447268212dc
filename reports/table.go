package reports

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// tableRenderer prints one section per fleet, most severe first, each
// finding with the file and line that set the value it is about.
type tableRenderer struct{}

var severityColor = map[string]string{
	policies.SeverityCritical: "\x1b[1;31m",
	policies.SeverityHigh:     "\x1b[31m",
	policies.SeverityMedium:   "\x1b[33m",
	policies.SeverityLow:      "\x1b[36m",
}

func (tableRenderer) Render(w io.Writer, r *audit.Result, opts Options) error {
	width := opts.Width
	if width <= 0 {
		width = DefaultWidth
	}
	byFleet := map[string][]policies.Finding{}
	for f := range r.All() {
		byFleet[f.Fleet] = append(byFleet[f.Fleet], *f)
	}
	names := make([]string, 0, len(r.Summary.Fleets))
	for name := range r.Summary.Fleets {
		names = append(names, name)
	}
	slices.Sort(names)
	var out bytes.Buffer
	for i, name := range names {
		if i > 0 {
			out.WriteString("\n")
		}
		fs := r.Summary.Fleets[name]
		label := Escape(name)
		if label == "" {
			label = "(no fleet)"
		}
		findings := byFleet[name]
		counts := countLine(fs.BySeverity)
		if waived := countWaived(findings); waived > 0 {
			counts = countLine(unwaivedCounts(findings)) + fmt.Sprintf(", %d waived", waived)
		}
		fmt.Fprintf(&out, "== %s: %d %s, %s\n", label, fs.Hosts, plural(fs.Hosts, "host", "hosts"), counts)
		if len(findings) == 0 {
			continue
		}
		var err error
		switch groupMode(opts.GroupBy, r.Summary.Hosts) {
		case GroupRule:
			err = renderRuleGroups(&out, findings, width, opts.Color)
		case GroupHost:
			hosts, by := groupByHost(findings)
			for _, h := range hosts {
				fmt.Fprintf(&out, "-- %s: %s\n", Escape(h), countLine(unwaivedCounts(by[h])))
				if err = renderFindings(&out, by[h], width, opts.Color, false); err != nil {
					break
				}
			}
		default:
			err = renderFindings(&out, findings, width, opts.Color, true)
		}
		if err != nil {
			return err
		}
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
func renderRuleGroups(out *bytes.Buffer, findings []policies.Finding, width int, color bool) error {
	cols := Columns{Width: width, Indent: " ", Header: []string{"SEVERITY", "HOSTS", "FINDING"}}
	for _, g := range groupByRule(findings) {
		text := Escape(g.Rule) + ": " + Escape(g.Title)
		for _, line := range valuesLines(evidenceValues(g.Findings), 3, 3) {
			text += "\n" + Escape(line)
		}
		if src := sourcesLine(groupSources(g.Findings)); src != "" {
			text += "\nat " + Escape(src)
		}
		sev := Escape(g.Severity)
		if g.Waived > 0 {
			text += fmt.Sprintf("\n%d of %d waived", g.Waived, len(g.Findings))
		}
		hosts := fmt.Sprintf("%d: %s", len(g.Hosts), Escape(foldHosts(g.Hosts, 6)))
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

func countWaived(findings []policies.Finding) int {
	n := 0
	for _, f := range findings {
		if f.Waived != nil {
			n++
		}
	}
	return n
}
