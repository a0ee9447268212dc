package reports

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// markdownRenderer writes an audit as Markdown (a CI job summary, a
// ticket): a summary table per fleet, then each fleet's findings, one row
// per finding, per rule (hosts folded) or per host, as Options.GroupBy says.
// Findings are read as audit.Result.All yields them; only the host view
// holds a fleet's findings.
type markdownFormat struct{}

func (markdownFormat) Name() string       { return "markdown" }
func (markdownFormat) Streams() bool      { return true }
func (markdownFormat) NeedsCatalog() bool { return false }
func (markdownFormat) Compliance() bool   { return true }

func (markdownFormat) Render(w io.Writer, r *audit.Result, opts Options) error {
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
	mode := groupMode(opts.GroupBy, s.Hosts)
	// Findings stream (audit.Result.All): each fleet keeps its counts and
	// what its section shows, written as they come where the view allows,
	// so the findings are never all held.
	sections := map[string]*mdSection{}
	for f, shared := range r.All() {
		sec := sections[f.Fleet]
		if sec == nil {
			sec = &mdSection{}
			sections[f.Fleet] = sec
		}
		sec.add(f, shared, mode)
	}
	for _, name := range names {
		sec := sections[name]
		if sec == nil {
			sec = &mdSection{}
		}
		c := sec.unwaived
		fmt.Fprintf(&out, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", mdCell(fleetLabel(name)), s.Fleets[name].Hosts,
			c[policies.SeverityCritical], c[policies.SeverityHigh], c[policies.SeverityMedium], c[policies.SeverityLow], c[policies.SeverityInfo], sec.waived)
	}
	for _, name := range names {
		sec := sections[name]
		if sec == nil || sec.n == 0 {
			continue
		}
		fmt.Fprintf(&out, "\n#### %s\n\n", mdCell(fleetLabel(name)))
		switch mode {
		case GroupRule:
			mdRuleGroups(&out, sec.groups.sorted())
		case GroupHost:
			hosts, by := groupByHost(sec.findings)
			for _, h := range hosts {
				fmt.Fprintf(&out, "<details><summary>%s: %s</summary>\n\n", mdCell(h), countLine(unwaivedCounts(by[h])))
				mdAuditFindings(&out, by[h], false)
				out.WriteString("\n</details>\n\n")
			}
		default:
			out.Write(sec.rows.Bytes())
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
	if lines := skippedLines(r); len(lines) > 0 {
		out.WriteString("\n")
		for _, l := range lines {
			fmt.Fprintf(&out, "- %s\n", mdCell(l))
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

// mdSection is one fleet's findings as its section needs them.
type mdSection struct {
	findingCounts
	// The view's content: the rows written (GroupNone), the rule groups
	// (GroupRule) or the findings (GroupHost).
	rows     bytes.Buffer
	groups   ruleGroups
	findings []policies.Finding
}

// add takes one finding, valid during the call only, and what
// audit.Result.All yields with it.
func (s *mdSection) add(f, shared *policies.Finding, mode string) {
	s.count(f)
	switch mode {
	case GroupRule:
		s.groups.add(f, shared)
	case GroupHost:
		s.findings = append(s.findings, *f)
	default:
		if s.n == 1 {
			mdFindingsHeader(&s.rows, true)
		}
		mdFindingRow(&s.rows, f, true)
	}
}

func mdAuditFindings(out *bytes.Buffer, findings []policies.Finding, withHost bool) {
	mdFindingsHeader(out, withHost)
	for i := range findings {
		mdFindingRow(out, &findings[i], withHost)
	}
}

func mdFindingsHeader(out *bytes.Buffer, withHost bool) {
	if withHost {
		out.WriteString("| Severity | Host | Rule | Finding | Set at |\n|---|---|---|---|---|\n")
	} else {
		out.WriteString("| Severity | Rule | Finding | Set at |\n|---|---|---|---|\n")
	}
}

func mdFindingRow(out *bytes.Buffer, f *policies.Finding, withHost bool) {
	where := provenance(*f)
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

// mdRuleGroups is the grouped view: a row per rule with its hosts folded
// and the distinct values of the facts it cites counted.
func mdRuleGroups(out *bytes.Buffer, groups []*ruleGroup) {
	out.WriteString("| Severity | Rule | Hosts | Values | Set at |\n|---|---|---|---|---|\n")
	for _, g := range groups {
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
			g.Hosts.Len(), mdCell(g.Hosts.fold(6)), strings.Join(vals, "<br>"), where)
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

// gateMarkdown is a pull-request comment: a summary table, then each
// fleet's introduced and resolved findings, unchanged ones folded away.
func (markdownFormat) RenderGate(w io.Writer, r *configrepo.Result, _ Options) error {
	var out bytes.Buffer
	if r.Plan != nil {
		// The hosts first: they are what the change does.
		mdPlan(&out, r.Plan)
		out.WriteString("---\n\n")
	}
	s := r.Summary
	if s.Introduced == 0 {
		fmt.Fprintf(&out, "### fleetaudit gate: no new findings\n\n")
	} else {
		fmt.Fprintf(&out, "### fleetaudit gate: %d new %s (%s)\n\n", s.Introduced, plural(s.Introduced, "finding", "findings"), countLine(s.IntroducedBySeverity))
	}
	fmt.Fprintf(&out, "%s → %s. %s.\n\n", mdCode(refLabel(r.Base)), mdCode(refLabel(r.Head)), blastRadius(r))
	out.WriteString("| Fleet | Hosts | Change | Introduced | Resolved | Unchanged |\n|---|---:|---|---:|---:|---:|\n")
	for _, f := range r.Fleets {
		hosts := "–"
		if f.Hosts != nil {
			hosts = fmt.Sprint(*f.Hosts)
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %d | %d | %d |\n", mdCell(f.Fleet), hosts, f.Status, len(f.Introduced), len(f.Resolved), len(f.Unchanged))
	}
	for _, f := range r.Fleets {
		for _, part := range changeParts(f) {
			fmt.Fprintf(&out, "\n#### %s: %s\n\n", mdCell(f.Fleet), part.title)
			mdFindings(&out, part.findings)
		}
		if len(f.Unchanged) > 0 {
			fmt.Fprintf(&out, "\n<details><summary>%s: %d unchanged %s</summary>\n\n", mdCell(f.Fleet), len(f.Unchanged), plural(len(f.Unchanged), "finding", "findings"))
			mdFindings(&out, f.Unchanged)
			out.WriteString("\n</details>\n")
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&out, "\n> **Warning:** %s\n", mdCell(w))
	}
	mdWaivers(&out, r.Waivers)
	for _, n := range waiverNotices(r.Waivers) {
		fmt.Fprintf(&out, "\n> **Waiver:** %s\n", mdCell(n))
	}
	if len(r.Errors) > 0 {
		out.WriteString("\n**Could not gate in full:**\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&out, "- %s at %s: %s\n", mdCell(e.Fleet), mdCell(e.Ref), mdCell(e.Error))
		}
	}
	_, err := w.Write(out.Bytes())
	return err
}
