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
	names := slices.Sorted(maps.Keys(s.Fleets))
	mode := groupMode(opts.GroupBy, s.Hosts)
	// Findings stream (audit.Result.All): each fleet keeps its counts and
	// what its section shows, written as they come where the view allows,
	// so the findings are never all held.
	sections := map[string]*mdSection{}
	for f, shared := range r.All() {
		sec := sections[f.Fleet]
		if sec == nil {
			sec = &mdSection{seen: opts.Seen, run: opts.Run}
			sections[f.Fleet] = sec
		}
		sec.add(f, shared, mode)
	}
	// The title counts as the table does: open findings by severity, the
	// waived apart.
	var total findingCounts
	for _, name := range names {
		sec := sections[name]
		if sec == nil {
			continue
		}
		total.n += sec.n
		total.waived += sec.waived
		for sev, n := range sec.unwaived {
			if total.unwaived == nil {
				total.unwaived = map[string]int{}
			}
			total.unwaived[sev] += n
		}
	}
	if open := total.n - total.waived; open > 0 {
		fmt.Fprintf(&out, "### fleetaudit audit: %d open %s (%s)", open, plural(open, "finding", "findings"), countLine(total.unwaived))
	} else {
		out.WriteString("### fleetaudit audit: no open findings")
	}
	if total.waived > 0 {
		fmt.Fprintf(&out, ", %d waived", total.waived)
	}
	fmt.Fprintf(&out, "\n\n%d %s audited", s.Audited, plural(s.Audited, "host", "hosts"))
	if s.Unread > 0 {
		fmt.Fprintf(&out, ", %d not read", s.Unread)
	}
	out.WriteString(".\n\n| Fleet | Hosts | Critical | High | Medium | Low | Info | Waived |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, name := range names {
		sec := sections[name]
		if sec == nil {
			sec = &mdSection{}
		}
		c := sec.unwaived
		fmt.Fprintf(&out, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", mdCell(fleetLabel(name)), s.Fleets[name].Hosts,
			c[policies.SeverityCritical], c[policies.SeverityHigh], c[policies.SeverityMedium], c[policies.SeverityLow], c[policies.SeverityInfo], sec.waived)
	}
	if opts.Changes != nil {
		mdChanges(&out, opts.Changes)
	}
	for _, name := range names {
		sec := sections[name]
		if sec == nil || sec.n == 0 {
			continue
		}
		fmt.Fprintf(&out, "\n#### %s\n\n", mdCell(fleetLabel(name)))
		switch mode {
		case GroupRule:
			mdRuleGroups(&out, sec.groups.sorted(), sec.groupOpenFor())
		case GroupHost:
			hosts, by := groupByHost(sec.findings)
			for _, h := range hosts {
				fmt.Fprintf(&out, "<details><summary>%s: %s</summary>\n\n", mdCell(h), countLine(unwaivedCounts(by[h])))
				mdAuditFindings(&out, by[h], false, sec.seen, sec.run)
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
	// seen says when open findings were first seen (nil: not known);
	// oldest is each rule's oldest open finding, for the grouped view.
	seen   Seen
	run    RunInfo
	oldest map[string]FirstSeen
}

// openFor says how long f has been open; "" for a waived finding or
// one seen does not know.
func (s *mdSection) openFor(f *policies.Finding) string {
	if s.seen == nil || f.Waived != nil {
		return ""
	}
	return s.seen.OpenFor(f, s.run)
}

// groupOpenFor says per rule how long its oldest open finding has been
// open.
func (s *mdSection) groupOpenFor() map[string]string {
	out := map[string]string{}
	for rule, fs := range s.oldest {
		out[rule] = openForGroup(fs, s.run)
	}
	return out
}

// add takes one finding, valid during the call only, and what
// audit.Result.All yields with it.
func (s *mdSection) add(f, shared *policies.Finding, mode string) {
	s.count(f)
	switch mode {
	case GroupRule:
		s.groups.add(f, shared)
		if s.seen != nil && f.Waived == nil {
			if fs, ok := s.seen[SeenKey(f)]; ok {
				if old, ok := s.oldest[f.Rule]; !ok || fs.At.Before(old.At) || fs.At.Equal(old.At) && fs.AtLeast {
					if s.oldest == nil {
						s.oldest = map[string]FirstSeen{}
					}
					s.oldest[f.Rule] = fs
				}
			}
		}
	case GroupHost:
		s.findings = append(s.findings, *f)
	default:
		if s.n == 1 {
			mdFindingsHeader(&s.rows, true)
		}
		mdFindingRow(&s.rows, f, true, s.openFor(f))
	}
}

func mdAuditFindings(out *bytes.Buffer, findings []policies.Finding, withHost bool, seen Seen, run RunInfo) {
	mdFindingsHeader(out, withHost)
	for i := range findings {
		open := ""
		if seen != nil && findings[i].Waived == nil {
			open = seen.OpenFor(&findings[i], run)
		}
		mdFindingRow(out, &findings[i], withHost, open)
	}
}

func mdFindingsHeader(out *bytes.Buffer, withHost bool) {
	if withHost {
		out.WriteString("| Severity | Host | Rule | Finding | Set at |\n|---|---|---|---|---|\n")
	} else {
		out.WriteString("| Severity | Rule | Finding | Set at |\n|---|---|---|---|\n")
	}
}

// mdFindingRow writes one finding; open says how long it has been open
// ("" leaves it out).
func mdFindingRow(out *bytes.Buffer, f *policies.Finding, withHost bool, open string) {
	where := provenance(*f)
	if where != "" {
		where = mdCode(where)
	}
	sev, msg := mdCell(f.Severity), mdCell(f.Message)
	if f.Waived != nil {
		sev += " (waived)"
		msg += "<br>_" + mdCell(waivedLine(f.Waived)) + "_"
	}
	if open != "" {
		msg += "<br>_" + mdCell(open) + "_"
	}
	if withHost {
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s |\n", sev, mdCell(f.Host), mdCode(f.Rule), msg, where)
	} else {
		fmt.Fprintf(out, "| %s | %s | %s | %s |\n", sev, mdCode(f.Rule), msg, where)
	}
}

// mdRuleGroups is the grouped view: a row per rule with its hosts folded
// and the distinct values of the facts it cites counted.
func mdRuleGroups(out *bytes.Buffer, groups []*ruleGroup, openFor map[string]string) {
	out.WriteString("| Severity | Rule | Hosts | Values | Set at |\n|---|---|---|---|---|\n")
	for _, g := range groups {
		sev := mdCell(g.Severity)
		if mix := mixLine(g.Open); mix != "" {
			sev += "<br>" + mix
		}
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
		title := mdCell(g.Title)
		if open := openFor[g.Rule]; open != "" {
			title += "<br>_" + mdCell(open) + "_"
		}
		fmt.Fprintf(out, "| %s | %s<br>%s | %d: %s | %s | %s |\n", sev, mdCode(g.Rule), title,
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

// mdChanges is "changed since the previous run": new and resolved
// findings by rule, facts changed with the file that set them, hosts
// added and gone.
func mdChanges(out *bytes.Buffer, c *Changes) {
	fmt.Fprintf(out, "\n#### Changed since %s\n\n%s\n", mdCell(previousLabel(c.Previous)), mdCell(c.summary()))
	for _, line := range c.caveats() {
		fmt.Fprintf(out, "\n> %s\n", mdCell(line))
	}
	findings := func(what string, list []policies.Finding) {
		groups, more := capRows(changeGroups(list), changeFindingRows)
		if len(groups) == 0 {
			return
		}
		fmt.Fprintf(out, "\n**%s findings**\n\n| Severity | Rule | Fleet | Hosts |\n|---|---|---|---|\n", what)
		for _, g := range groups {
			sev := mdCell(g.Severity)
			if g.Mix != "" {
				sev += "<br>" + g.Mix
			}
			fmt.Fprintf(out, "| %s | %s<br>%s | %s | %d: %s |\n", sev, mdCode(g.Rule), mdCell(g.Title),
				mdCell(fleetLabel(g.Fleet)), g.Hosts, mdCell(g.HostList))
		}
		if more > 0 {
			fmt.Fprintf(out, "\nand %d more\n", more)
		}
	}
	findings("New", c.New)
	findings("Resolved", c.Resolved)
	if facts, more := capRows(factGroups(c.Facts), changeFactRows); len(facts) > 0 {
		out.WriteString("\n**Facts changed**\n\n| Fact | Change | Set at | Hosts |\n|---|---|---|---|\n")
		for _, g := range facts {
			where := ""
			if g.Source != "" {
				where = mdCode(g.Source)
			}
			fmt.Fprintf(out, "| %s | %s | %s | %d: %s |\n", mdCode(g.Fact), mdCell(g.Text()), where, g.Hosts, mdCell(g.HostList))
		}
		if more > 0 {
			fmt.Fprintf(out, "\nand %d more\n", more)
		}
	}
	for _, part := range []struct {
		what  string
		hosts []HostRef
	}{{"Hosts added", c.Added}, {"Hosts gone", c.Gone}} {
		if lines := hostLines(part.hosts); len(lines) > 0 {
			fmt.Fprintf(out, "\n**%s:**\n\n", part.what)
			for _, l := range lines {
				fmt.Fprintf(out, "- %s\n", mdCell(l))
			}
		}
	}
}
