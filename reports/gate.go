package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

// GateRenderer writes one gate result in one format.
type GateRenderer interface {
	RenderGate(w io.Writer, r *configrepo.Result, opts Options) error
}

var gateRenderers = map[string]GateRenderer{
	"table":      gateTable{},
	"json":       gateJSON{},
	"markdown":   gateMarkdown{},
	"sarif":      sarifGate{},
	"junit":      junitGate{},
	"prometheus": promGate{},
	"html":       htmlGate{},
}

// GateFormats lists the format names GetGate accepts.
func GateFormats() []string { return names(gateRenderers) }

// GetGate returns the gate renderer for a format name.
func GetGate(format string) (GateRenderer, error) { return lookup(gateRenderers, format) }

// gateJSON writes the fleetaudit.gate/v1 document.
type gateJSON struct{}

func (gateJSON) RenderGate(w io.Writer, r *configrepo.Result, _ Options) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := w.Write(EscapeJSON(buf.Bytes()))
	return err
}

// gateTable is for a terminal or a CI log: one section per fleet the change
// reaches, introduced findings in full, resolved ones in full, unchanged
// ones counted.
type gateTable struct{}

func (gateTable) RenderGate(w io.Writer, r *configrepo.Result, opts Options) error {
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
	_, err := w.Write(out.Bytes())
	return err
}

type changePart struct {
	title    string
	findings []policies.Finding
}

// changeParts are a fleet's introduced and resolved findings, the parts
// reports list in full, leaving out empty ones.
func changeParts(f configrepo.FleetResult) []changePart {
	var parts []changePart
	for _, p := range []changePart{{"introduced", f.Introduced}, {"resolved", f.Resolved}} {
		if len(p.findings) > 0 {
			parts = append(parts, p)
		}
	}
	return parts
}

// refLabel names a ref for people; the ref's name is escaped (a branch name
// is repo content).
func refLabel(ref configrepo.RefInfo) string {
	ref.Ref = Escape(ref.Ref)
	ref.Commit = Escape(ref.Commit)
	switch {
	case ref.Commit == "":
		return ref.Ref
	case ref.Ref == "work tree":
		return fmt.Sprintf("work tree (at %.12s)", ref.Commit)
	case strings.HasPrefix(ref.Commit, ref.Ref):
		return fmt.Sprintf("%.12s", ref.Commit)
	}
	return fmt.Sprintf("%s (%.12s)", ref.Ref, ref.Commit)
}

func fleetHeading(f configrepo.FleetResult) string {
	s := Escape(f.Fleet)
	var extra []string
	if f.Profile != "" && f.Profile != f.Fleet {
		extra = append(extra, "profile "+Escape(f.Profile))
	}
	if f.Hosts != nil {
		extra = append(extra, fmt.Sprintf("%d %s", *f.Hosts, plural(*f.Hosts, "host", "hosts")))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func fleetCounts(f configrepo.FleetResult) string {
	return fmt.Sprintf("%s, %d introduced, %d resolved, %d unchanged", f.Status, len(f.Introduced), len(f.Resolved), len(f.Unchanged))
}

func blastRadius(r *configrepo.Result) string {
	n := len(r.Summary.FleetsAffected)
	if n == 0 {
		return "Blast radius: the change reaches no fleet"
	}
	var parts []string
	for _, f := range r.Fleets {
		if !slices.Contains(r.Summary.FleetsAffected, f.Fleet) {
			continue
		}
		if f.Hosts != nil {
			parts = append(parts, fmt.Sprintf("%s %d", Escape(f.Fleet), *f.Hosts))
		} else {
			parts = append(parts, Escape(f.Fleet))
		}
	}
	s := fmt.Sprintf("Blast radius: %d %s", n, plural(n, "fleet", "fleets"))
	if h := r.Summary.HostsAffected; h != nil {
		s += fmt.Sprintf(", %d %s", *h, plural(*h, "host", "hosts"))
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

// gateMarkdown is a pull-request comment: a summary table, then each
// fleet's introduced and resolved findings, unchanged ones folded away.
type gateMarkdown struct{}

func (gateMarkdown) RenderGate(w io.Writer, r *configrepo.Result, _ Options) error {
	var out bytes.Buffer
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

func mdFindings(out *bytes.Buffer, findings []policies.Finding) {
	out.WriteString("| Severity | Rule | Finding | Set at |\n|---|---|---|---|\n")
	for i := range findings {
		mdFindingRow(out, &findings[i], false)
	}
}

// mdCell keeps a value inside one table cell, control characters escaped
// for whoever reads the file on a terminal.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "<", "&lt;")
	s = strings.ReplaceAll(s, "`", "\\`") // a stray backtick would open a code span
	return Escape(strings.Join(strings.Fields(s), " "))
}

func mdCode(s string) string {
	s = Escape(strings.Join(strings.Fields(s), " "))
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	s = strings.ReplaceAll(s, "|", "\\|")
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
