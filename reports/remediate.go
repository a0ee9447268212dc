package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/remediate"
	"github.com/fleetaudit/fleetaudit/remediate/githubpr"
)

// remediateDoc is the JSON output: the proposals (what --github publishes),
// the refused groups with why, and the skipped findings.
type remediateDoc struct {
	Schema     string               `json:"schema"`
	Base       string               `json:"base"`
	BaseCommit string               `json:"base_commit"`
	Proposals  []remediate.Proposal `json:"proposals"`
	Refused    []refusedGroup       `json:"refused"`
	Skipped    []remediate.Skipped  `json:"skipped"`
	Warnings   []string             `json:"warnings,omitempty"`
	Published  []githubpr.Result    `json:"published,omitempty"`
}

type refusedGroup struct {
	Rule      string               `json:"rule"`
	Fleet     string               `json:"fleet"`
	Hosts     []string             `json:"hosts,omitempty"`
	Fix       *remediate.Fix       `json:"fix,omitempty"`
	Placement *remediate.Placement `json:"placement,omitempty"`
	Proof     []string             `json:"proof,omitempty"`
	Reason    string               `json:"reason"`
}

// WriteRemediateJSON writes a remediate plan as its JSON document;
// published are the pull requests --github made (github: it was given).
func WriteRemediateJSON(w io.Writer, plan *remediate.Plan, published []githubpr.Result, github bool) error {
	doc := remediateDoc{
		Schema: plan.Schema, Base: plan.Base, BaseCommit: plan.BaseCommit,
		Proposals: plan.Proposals(), Refused: []refusedGroup{}, Skipped: plan.Skipped, Warnings: plan.Warnings,
	}
	if doc.Proposals == nil {
		doc.Proposals = []remediate.Proposal{}
	}
	if github {
		doc.Published = published
		if doc.Published == nil {
			doc.Published = []githubpr.Result{}
		}
	}
	for _, g := range plan.Groups {
		if g.Proposal == nil {
			doc.Refused = append(doc.Refused, refusedGroup{Rule: g.Rule, Fleet: g.Fleet, Hosts: g.Hosts, Fix: g.Fix, Placement: g.Placement, Proof: g.Proof, Reason: g.Refused})
		}
	}
	return writeJSON(w, doc, true)
}

// WriteRemediateTable writes the proposals for a person: every line but
// the diff's wraps to width with a hanging indent; the diff is printed as
// it is, so that it still applies with git apply when copied.
func WriteRemediateTable(w io.Writer, plan *remediate.Plan, published []githubpr.Result, github bool, width int) error {
	esc := Escape
	var b strings.Builder
	// line writes text (escaped already) after indent, wrapped to width;
	// its continuation lines are indented two more.
	line := func(indent, text string) {
		for i, l := range Wrap(text, max(width-len(indent)-2, 20)) {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(strings.TrimRight(indent+l, " ") + "\n")
		}
	}
	byBranch := map[string]githubpr.Result{}
	for _, r := range published {
		byBranch[r.Branch] = r
	}
	line("", fmt.Sprintf("base %s (%s)", esc(plan.Base), esc(shortHash(plan.BaseCommit))))
	for _, wn := range plan.Warnings {
		line("", "warning: "+esc(wn))
	}
	for _, g := range plan.Groups {
		verdict := "proven"
		if g.Proposal == nil {
			verdict = "refused"
		}
		b.WriteString("\n")
		line("", fmt.Sprintf("== %s in fleet %s: %s", esc(g.Rule), esc(g.Fleet), verdict))
		remediateFindings(line, g.Findings)
		if len(g.Hosts) > 0 {
			line("", fmt.Sprintf("hosts (%d): %s", len(g.Hosts), esc(strings.Join(g.Hosts, ", "))))
		}
		if g.Fix != nil {
			line("", "fix: "+esc(g.Fix.String()))
		}
		if g.Placement != nil {
			line("", "placement: "+esc(g.Placement.Why))
			for _, p := range g.Placement.Paths() {
				line("  ", "writes "+esc(p))
			}
		}
		if len(g.Proof) > 0 {
			line("", fmt.Sprintf("gate proof (%s -> with the fix):", esc(plan.Base)))
			for _, l := range g.Proof {
				line("  ", esc(l))
			}
		}
		if g.Proposal == nil {
			line("", "refused: "+esc(g.Refused))
			continue
		}
		line("", "branch: "+esc(g.Proposal.Branch))
		if github {
			if r, ok := byBranch[g.Proposal.Branch]; ok {
				text := "pull request: " + esc(r.Action)
				if r.URL != "" {
					text += " " + esc(r.URL)
				}
				if r.Reason != "" {
					text += " (" + esc(r.Reason) + ")"
				}
				line("", text)
			} else {
				line("", "pull request: not attempted (the run stopped before it)")
			}
		} else {
			fmt.Fprintf(&b, "diff:\n%s", EscapeText(g.Proposal.Diff))
		}
	}
	if len(plan.Skipped) > 0 {
		b.WriteString("\nskipped:\n")
		for _, s := range plan.Skipped {
			hosts := ""
			if len(s.Hosts) > 0 {
				hosts = fmt.Sprintf(" (%d %s: %s)", len(s.Hosts), plural(len(s.Hosts), "host", "hosts"), strings.Join(s.Hosts, ", "))
			}
			line("  ", fmt.Sprintf("%s in fleet %s%s: %s", esc(s.Rule), esc(s.Fleet), esc(hosts), esc(s.Reason)))
		}
	}
	n := len(plan.Proposals())
	b.WriteString("\n")
	line("", fmt.Sprintf("%d %s proven, %d refused, %d skipped", n, plural(n, "fix", "fixes"), plan.Refused(), len(plan.Skipped)))
	_, err := io.WriteString(w, b.String())
	return err
}

func remediateFindings(line func(indent, text string), fs []policies.Finding) {
	esc := Escape
	const maxShown = 5 // distinct messages; thousands of hosts may differ in a detail
	seen := map[string]bool{}
	for _, f := range fs {
		if seen[f.Message] {
			continue // the same finding on another host
		}
		if len(seen) == maxShown {
			line("  ", "(and more findings of the rule on other hosts)")
			break
		}
		seen[f.Message] = true
		line("", fmt.Sprintf("finding (%s): %s", esc(f.Severity), esc(f.Message)))
		for _, e := range f.Evidence {
			if e.Source == "" {
				continue
			}
			line("  ", fmt.Sprintf("%s set at %s", esc(e.Fact), esc(e.Source)))
		}
	}
}

func shortHash(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
