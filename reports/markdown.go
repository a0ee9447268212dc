package reports

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// markdownRenderer writes an audit as Markdown (a CI job summary, a
// ticket): a summary table per fleet, then each fleet's findings, one row
// per finding, per rule (hosts folded) or per host, as Options.GroupBy says.
type markdownRenderer struct{}

func (markdownRenderer) Render(w io.Writer, r *audit.Result, opts Options) error {
	var out bytes.Buffer
	s := r.Summary
	waived := 0
	if r.Waivers != nil {
		waived = r.Waivers.Waived
	}
	fmt.Fprintf(&out, "### fleetaudit audit: %d %s (%s)", s.Findings, plural(s.Findings, "finding", "findings"), countLine(s.BySeverity))
	if waived > 0 {
		fmt.Fprintf(&out, ", %d waived", waived)
	}
	fmt.Fprintf(&out, "\n\n%d %s audited", s.Audited, plural(s.Audited, "host", "hosts"))
	if s.Unread > 0 {
		fmt.Fprintf(&out, ", %d not read", s.Unread)
	}
	out.WriteString(".\n\n| Fleet | Hosts | Critical | High | Medium | Low | Info | Waived |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	names := slices.Sorted(maps.Keys(s.Fleets))
	byFleet := map[string][]policies.Finding{}
	for _, f := range r.Findings {
		byFleet[f.Fleet] = append(byFleet[f.Fleet], f)
	}
	for _, name := range names {
		c := unwaivedCounts(byFleet[name])
		nw := len(byFleet[name])
		for _, n := range c {
			nw -= n
		}
		fmt.Fprintf(&out, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", mdCell(fleetLabel(name)), s.Fleets[name].Hosts,
			c[policies.SeverityCritical], c[policies.SeverityHigh], c[policies.SeverityMedium], c[policies.SeverityLow], c[policies.SeverityInfo], nw)
	}
	mode := groupMode(opts.GroupBy, s.Hosts)
	for _, name := range names {
		findings := byFleet[name]
		if len(findings) == 0 {
			continue
		}
		fmt.Fprintf(&out, "\n#### %s\n\n", mdCell(fleetLabel(name)))
		switch mode {
		case GroupRule:
			mdRuleGroups(&out, findings)
		case GroupHost:
			hosts, by := groupByHost(findings)
			for _, h := range hosts {
				fmt.Fprintf(&out, "<details><summary>%s: %s</summary>\n\n", mdCell(h), countLine(unwaivedCounts(by[h])))
				mdAuditFindings(&out, by[h], false)
				out.WriteString("\n</details>\n\n")
			}
		default:
			mdAuditFindings(&out, findings, true)
		}
	}
	mdWaivers(&out, r.Waivers)
	for _, n := range waiverNotices(r.Waivers) {
		fmt.Fprintf(&out, "\n> **Waiver:** %s\n", mdCell(n))
	}
	if len(r.Errors) > 0 {
		out.WriteString("\n**Could not audit in full:**\n\n")
		for _, e := range r.Errors {
			who := e.Host
			if who == "" {
				who = e.Source
			}
			fmt.Fprintf(&out, "- %s: %s\n", mdCell(who), mdCell(e.Error))
		}
	}
	_, err := w.Write(out.Bytes())
	return err
}

func fleetLabel(name string) string {
	if name == "" {
		return "(no fleet)"
	}
	return name
}

func mdAuditFindings(out *bytes.Buffer, findings []policies.Finding, withHost bool) {
	if withHost {
		out.WriteString("| Severity | Host | Rule | Finding | Set at |\n|---|---|---|---|---|\n")
	} else {
		out.WriteString("| Severity | Rule | Finding | Set at |\n|---|---|---|---|\n")
	}
	for _, f := range findings {
		where := provenance(f)
		if where != "" {
			where = mdCode(where)
		}
		sev, msg := mdCell(f.Severity), mdCell(f.Message)
		if f.Waived != nil {
			sev += " (waived)"
			msg += "<br>_" + mdCell(waivedLine(f.Waived)) + "_"
		}
		if withHost {
			fmt.Fprintf(out, "| %s | %s | %s | %s | %s |\n", sev, mdCell(f.Host), mdCode(f.Rule), msg, where)
		} else {
			fmt.Fprintf(out, "| %s | %s | %s | %s |\n", sev, mdCode(f.Rule), msg, where)
		}
	}
}

// mdRuleGroups is the grouped view: a row per rule with its hosts folded
// and the distinct values of the facts it cites counted.
func mdRuleGroups(out *bytes.Buffer, findings []policies.Finding) {
	out.WriteString("| Severity | Rule | Hosts | Values | Set at |\n|---|---|---|---|---|\n")
	for _, g := range groupByRule(findings) {
		sev := mdCell(g.Severity)
		if g.Waived > 0 {
			sev += fmt.Sprintf(" (%d waived)", g.Waived)
		}
		var vals []string
		for _, line := range valuesLines(g.factValues(), 3, 3) {
			vals = append(vals, mdCell(line))
		}
		where := sourcesLine(g.sourceCounts())
		if where != "" {
			where = mdCode(where)
		}
		fmt.Fprintf(out, "| %s | %s<br>%s | %d: %s | %s | %s |\n", sev, mdCode(g.Rule), mdCell(g.Title),
			len(g.Hosts), mdCell(foldHosts(g.Hosts, 6)), strings.Join(vals, "<br>"), where)
	}
}

// mdWaivers lists every waiver with its state: reviewers see what is
// accepted, by whom, until when.
func mdWaivers(out *bytes.Buffer, rep *waivers.Report) {
	if rep == nil || len(rep.Waivers) == 0 {
		return
	}
	fmt.Fprintf(out, "\n#### Waivers (%s)\n\n", mdCode(rep.File))
	out.WriteString("| State | Rule | Scope | Owner | Expires | Findings | Justification |\n|---|---|---|---|---|---:|---|\n")
	for _, st := range rep.Waivers {
		state := st.State
		if st.State != waivers.Active {
			state = "**" + state + "**"
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %d | %s |\n", state, mdCode(st.Rule), mdCell(scopeText(st.Waiver)),
			mdCell(st.Owner), mdCell(st.Expires), st.Matched, mdCell(st.Justification))
	}
}

// scopeText writes a waiver's scope in one line.
func scopeText(w waivers.Waiver) string {
	var parts []string
	if w.Fleet != "" {
		parts = append(parts, "fleet "+w.Fleet)
	}
	if len(w.Hosts) > 0 {
		parts = append(parts, "hosts "+strings.Join(w.Hosts, ", "))
	}
	if len(w.Paths) > 0 {
		parts = append(parts, "paths "+strings.Join(w.Paths, ", "))
	}
	return strings.Join(parts, "; ")
}
