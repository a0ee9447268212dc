package reports

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fleetaudit/fleetaudit/configrepo"
)

// planBlast is the plan's blast radius: hosts that newly fail, by fleet
// and severity.
func planBlast(p *configrepo.Plan) string {
	s := p.Summary
	if s.NewlyFailing == 0 {
		return fmt.Sprintf("Blast radius: no host newly fails (%d planned, %d not planned)", s.Planned, s.NotPlanned)
	}
	var parts []string
	var fleet string
	for _, x := range s.NewlyFailingBy {
		part := fmt.Sprintf("%d %s", x.Hosts, x.Severity)
		if x.Fleet != fleet {
			fleet = x.Fleet
			part = Escape(x.Fleet) + ": " + part
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("Blast radius: %d %s newly %s (%s); %d fixed, %d unchanged, %d not planned",
		s.NewlyFailing, plural(s.NewlyFailing, "host", "hosts"), plural(s.NewlyFailing, "fails", "fail"),
		strings.Join(parts, ", "), s.Fixed, s.Unchanged, s.NotPlanned)
}

// unnamedHost stands for a host whose snapshot could not be read for its
// name (the detail names the file).
const unnamedHost = "(host unknown)"

// mdHosts is a group's hosts for Markdown: each name (a snapshot's, so
// untrusted) in a code span, where no link, emphasis or @mention forms.
func mdHosts(g configrepo.HostGroup) string {
	parts := make([]string, len(g.Hosts))
	for i, h := range g.Hosts {
		parts[i] = mdCode(h)
	}
	return fmt.Sprintf("%s (%d %s)", strings.Join(parts, ", "), g.Count, plural(g.Count, "host", "hosts"))
}

func groupHosts(g configrepo.HostGroup) string {
	return fmt.Sprintf("%s (%d %s)", Escape(strings.Join(g.Hosts, ", ")), g.Count, plural(g.Count, "host", "hosts"))
}

// notStackedText says which host files the plan leaves out, each name as
// quote gives it.
func notStackedText(files []string, quote func(string) string) string {
	parts := make([]string, len(files))
	for i, f := range files {
		parts[i] = quote(f)
	}
	return "planned without these host files (the repo's files of their sections replace them): " + strings.Join(parts, ", ")
}

// unsetText names the settings the plan takes as unset.
func unsetText(facts []string, quote func(string) string) string {
	parts := make([]string, len(facts))
	for i, f := range facts {
		parts[i] = quote(f)
	}
	return "taken as unset (the change stops setting them, and a host file it overrode may set them; the snapshot does not say): " + strings.Join(parts, ", ")
}

func overrideText(o configrepo.Override) string {
	return fmt.Sprintf("%s set by %s is overridden by %s (%v)", o.Fact, o.Repo, o.By, o.Value)
}

type planPart struct {
	title  string
	groups []configrepo.HostGroup
}

func planParts(f configrepo.PlanFleet) []planPart {
	return []planPart{{"newly failing", f.NewlyFailing}, {"fixed", f.Fixed}, {"unchanged", f.Unchanged}}
}

// tablePlan writes the per-host plan for the terminal.
func tablePlan(out *bytes.Buffer, p *configrepo.Plan, width int) {
	out.WriteString("\n")
	hanging(out, fmt.Sprintf("Per-host plan: %d recorded %s from %s, snapshots at most %s old", p.Summary.Hosts,
		plural(p.Summary.Hosts, "host", "hosts"), Escape(p.Source), p.MaxAge), "", width)
	for _, f := range p.Fleets {
		head := Escape(f.Fleet)
		if f.Profile != "" && f.Profile != f.Fleet {
			head += " (profile " + Escape(f.Profile) + ")"
		}
		fmt.Fprintf(out, "\n== %s: %d %s planned: %d newly failing, %d fixed, %d unchanged\n", head, f.Hosts, plural(f.Hosts, "host", "hosts"),
			count(f.NewlyFailing), count(f.Fixed), count(f.Unchanged))
		for _, part := range planParts(f) {
			for _, g := range part.groups {
				line := "-- " + part.title + ": " + groupHosts(g)
				if g.Severity != "" {
					line += ", worst " + g.Severity
				}
				hanging(out, line, "", width)
				for _, x := range g.Introduced {
					line := "+ " + x.Severity + " " + Escape(x.Rule) + ": " + Escape(x.Message)
					if x.Waived != nil {
						line += " [waived by " + Escape(x.Waived.Owner) + " until " + Escape(x.Waived.Expires) + ", " + Escape(x.Waived.Source) + "]"
					}
					hanging(out, line, "   ", width)
					if len(x.Sources) > 0 {
						hanging(out, "at "+Escape(strings.Join(x.Sources, ", ")), "       ", width)
					}
				}
				for _, x := range g.Resolved {
					hanging(out, "- "+x.Severity+" "+Escape(x.Rule)+": "+Escape(x.Message), "   ", width)
				}
				for _, o := range g.Overridden {
					hanging(out, "overridden: "+Escape(overrideText(o)), "   ", width)
				}
				if len(g.NotStacked) > 0 {
					hanging(out, notStackedText(g.NotStacked, Escape), "   ", width)
				}
				if len(g.Unset) > 0 {
					hanging(out, unsetText(g.Unset, Escape), "   ", width)
				}
			}
		}
	}
	if len(p.NotPlanned) > 0 {
		fmt.Fprintf(out, "\nNot planned (%d), never counted as unaffected:\n", len(p.NotPlanned))
		for _, n := range p.NotPlanned {
			who := Escape(n.Host)
			if n.Host == "" {
				who = unnamedHost
			}
			if n.Fleet != "" {
				who += " (" + Escape(n.Fleet) + ")"
			}
			hanging(out, who+": "+n.Reason+": "+Escape(n.Detail), "  ", width)
		}
	}
	fmt.Fprintf(out, "\n%s\n", planBlast(p))
}

func count(gs []configrepo.HostGroup) int {
	n := 0
	for _, g := range gs {
		n += g.Count
	}
	return n
}

// mdPlan writes the per-host plan for a PR comment: per fleet, the hosts
// that newly fail first, most severe first, host lists folded.
func mdPlan(out *bytes.Buffer, p *configrepo.Plan) {
	s := p.Summary
	if s.NewlyFailing == 0 {
		fmt.Fprintf(out, "### fleetaudit gate plan: no host newly fails\n\n")
	} else {
		by := map[string]int{}
		for _, x := range s.NewlyFailingBy {
			by[x.Severity] += x.Hosts
		}
		fmt.Fprintf(out, "### fleetaudit gate plan: %d %s newly %s (%s)\n\n", s.NewlyFailing, plural(s.NewlyFailing, "host", "hosts"),
			plural(s.NewlyFailing, "fails", "fail"), countLine(by))
	}
	fmt.Fprintf(out, "%s. Hosts from %s, snapshots at most %s old.\n\n", planBlast(p), mdCode(p.Source), p.MaxAge)
	out.WriteString("| Fleet | Planned | Newly failing | Fixed | Unchanged |\n|---|---:|---:|---:|---:|\n")
	for _, f := range p.Fleets {
		fmt.Fprintf(out, "| %s | %d | %d | %d | %d |\n", mdCell(f.Fleet), f.Hosts, count(f.NewlyFailing), count(f.Fixed), count(f.Unchanged))
	}
	for _, f := range p.Fleets {
		if len(f.NewlyFailing) > 0 {
			fmt.Fprintf(out, "\n#### %s: newly failing\n\n| Hosts | Severity | Rule | Finding | Set at |\n|---|---|---|---|---|\n", mdCell(f.Fleet))
			for _, g := range f.NewlyFailing {
				for _, x := range g.Introduced {
					sev := x.Severity
					if x.Waived != nil {
						sev += " (waived)"
					}
					fmt.Fprintf(out, "| %s | %s | %s | %s | %s |\n", mdHosts(g), sev, mdCode(x.Rule), mdCell(x.Message), mdSources(x.Sources))
				}
			}
			for _, g := range f.NewlyFailing {
				if len(g.NotStacked) > 0 {
					fmt.Fprintf(out, "\n%s: %s\n", mdHosts(g), notStackedText(g.NotStacked, mdCode))
				}
				if len(g.Unset) > 0 {
					fmt.Fprintf(out, "\n%s: %s\n", mdHosts(g), unsetText(g.Unset, mdCode))
				}
			}
		}
		var quiet []string
		for _, part := range planParts(f)[1:] {
			for _, g := range part.groups {
				line := fmt.Sprintf("- %s: %s", part.title, mdHosts(g))
				for _, x := range g.Resolved {
					line += fmt.Sprintf("; resolves %s (%s)", mdCode(x.Rule), x.Severity)
				}
				for _, o := range g.Overridden {
					line += "; " + mdCell(overrideText(o))
				}
				if len(g.NotStacked) > 0 {
					line += "; " + notStackedText(g.NotStacked, mdCode)
				}
				if len(g.Unset) > 0 {
					line += "; " + unsetText(g.Unset, mdCode)
				}
				quiet = append(quiet, line)
			}
		}
		if len(quiet) > 0 {
			fmt.Fprintf(out, "\n<details><summary>%s: %d fixed, %d unchanged</summary>\n\n%s\n\n</details>\n", mdCell(f.Fleet), count(f.Fixed), count(f.Unchanged), strings.Join(quiet, "\n"))
		}
	}
	if len(p.NotPlanned) > 0 {
		fmt.Fprintf(out, "\n**Not planned (%d)**, never counted as unaffected:\n\n", len(p.NotPlanned))
		for _, n := range p.NotPlanned {
			fleet := ""
			if n.Fleet != "" {
				fleet = " (" + mdCode(n.Fleet) + ")"
			}
			who := unnamedHost
			if n.Host != "" {
				who = mdCode(n.Host)
			}
			fmt.Fprintf(out, "- %s%s: %s: %s\n", who, fleet, n.Reason, mdCode(n.Detail))
		}
	}
	out.WriteString("\n")
}

func mdSources(sources []string) string {
	var parts []string
	for _, s := range sources {
		parts = append(parts, mdCode(s))
	}
	return strings.Join(parts, "<br>")
}

// CommentLimit is the most characters GitHub takes in a comment body.
const CommentLimit = 65536

// SplitComment cuts a Markdown report to fit in a PR comment of limit
// characters: the cut is at a line boundary, and a note says the rest is in
// the job summary. rest is "" when md fits.
func SplitComment(md string, limit int) (comment string, cut bool) {
	if utf8.RuneCountInString(md) <= limit {
		return md, false
	}
	const note = "\n\n> **The plan continues in the job summary:** this comment holds its first part only (GitHub comments are limited to 65,536 characters).\n"
	room := limit - utf8.RuneCountInString(note)
	// Walk runes to the byte offset of the room'th character.
	end := len(md)
	n := 0
	for i := range md {
		if n == room {
			end = i
			break
		}
		n++
	}
	head := md[:end]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i]
	}
	// A cut inside a <details> block would leave it open.
	if open, close := strings.LastIndex(head, "<details>"), strings.LastIndex(head, "</details>"); open > close {
		head = head[:open]
	}
	return strings.TrimRight(head, "\n") + note, true
}

// planSARIF adds the plan's findings: introduced as baselineState "new",
// resolved as "absent", each on the hosts of its group.
func planSARIF(b *sarifBuilder, st *sarifStream, p *configrepo.Plan) {
	for _, fl := range p.Fleets {
		for _, part := range planParts(fl) {
			for _, g := range part.groups {
				for _, x := range []struct {
					state string
					list  []configrepo.PlanFinding
				}{{"new", g.Introduced}, {"absent", g.Resolved}} {
					for _, pf := range x.list {
						f := pf.Finding()
						f.Host = strings.Join(g.Hosts, ",")
						f.Fleet = fl.Fleet
						f.Message = fmt.Sprintf("on %s: %s", groupHosts(g), f.Message)
						res := b.result(f, true)
						if res.Locations[0].PhysicalLocation == nil {
							res.Locations[0].PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtLoc{URI: "fleetaudit.yaml", URIBaseID: srcRoot}}
						}
						res.BaselineState = x.state
						res.Properties["hosts"] = g.Hosts
						res.Properties["host_count"] = g.Count
						st.add(res)
					}
				}
			}
		}
	}
}
