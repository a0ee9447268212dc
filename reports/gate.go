package reports

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

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

func mdFindings(out *bytes.Buffer, findings []policies.Finding) {
	out.WriteString("| Severity | Rule | Finding | Set at |\n|---|---|---|---|\n")
	for i := range findings {
		mdFindingRow(out, &findings[i], false, "")
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
