package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
)

// ListedRule is a rule as a fleet runs it: with the profile's severity, and
// the rule's own when the profile overrode it.
type ListedRule struct {
	policies.Rule
	SeverityOverride *policies.SeverityOverride `json:"severity_override,omitempty"`
}

// ListRules are the rules as profile (named fleet) runs them, and the ids
// it excludes; every rule as it is when profile is nil.
func ListRules(rules []policies.Rule, profile *fleets.Profile, fleet string) (listed []ListedRule, excluded []string) {
	listed = make([]ListedRule, 0, len(rules))
	for _, r := range rules {
		if profile == nil {
			listed = append(listed, ListedRule{Rule: r})
			continue
		}
		if !profile.Selects(r) {
			if profile.Excludes(r) {
				excluded = append(excluded, r.ID)
			}
			continue
		}
		lr := ListedRule{Rule: r}
		if sev := profile.Severity(r.ID, r.Severity); sev != r.Severity {
			lr.SeverityOverride = &policies.SeverityOverride{RuleSeverity: r.Severity, Profile: fleet}
			lr.Severity = sev
		}
		listed = append(listed, lr)
	}
	return listed, excluded
}

// RuleListJSON writes the listed rules as a JSON array.
func RuleListJSON(w io.Writer, listed []ListedRule) error {
	return writeJSON(w, listed, true)
}

// RuleListTable writes the listed rules for a person, then the rules the
// fleet's profile excludes.
func RuleListTable(w io.Writer, listed []ListedRule, excluded []string, fleet string, width int) error {
	// Rule ids stay whole: people copy them into explain and profiles.
	cols := Columns{Header: []string{"ID", "SEVERITY", "PROFILES", "TITLE"}, Width: width, MinWidths: []int{1 << 10}, Unbroken: []bool{true}, MinLast: 20}
	for _, r := range listed {
		sev := r.Severity
		if r.SeverityOverride != nil {
			sev += " (rule: " + r.SeverityOverride.RuleSeverity + ")"
		}
		cols.Rows = append(cols.Rows, []string{Escape(r.ID), Escape(sev), Escape(strings.Join(r.Profiles, ", ")), Escape(r.Title)})
	}
	if err := cols.Write(w); err != nil {
		return err
	}
	if len(excluded) > 0 {
		text := fmt.Sprintf("Excluded by profile %s: %s", fleet, strings.Join(excluded, ", "))
		_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(Wrap(Escape(text), width), "\n"))
		return err
	}
	return nil
}

// ExplainRule writes a rule for a person: prose wrapped to width,
// everything from the rule's METADATA escaped (user rules are outside code).
func ExplainRule(w io.Writer, r policies.Rule, width int) {
	esc := Escape
	para := func(text string) string {
		var lines []string
		for _, l := range Wrap(EscapeText(text), width-2) {
			lines = append(lines, strings.TrimRight("  "+l, " "))
		}
		return strings.Join(lines, "\n")
	}
	list := func(items []string) {
		for _, item := range items {
			fmt.Fprintf(w, "%s\n", para(esc(item)))
		}
	}
	head := fmt.Sprintf("%s  (%s, %s scope, profiles: %s)", esc(r.ID), esc(r.Severity), esc(string(r.Scope)), esc(strings.Join(r.Profiles, ", ")))
	if len(head) > width {
		head = strings.Join(Wrap(head, width), "\n")
	}
	fmt.Fprintf(w, "%s\n%s\n\n", head, strings.Join(Wrap(esc(r.Title), width), "\n"))
	fmt.Fprintf(w, "Why and detection:\n%s\n\n", para(r.Description))
	fmt.Fprintf(w, "Remediation:\n%s\n\n", para(r.Remediation))
	fmt.Fprintf(w, "Reads facts:\n")
	list(r.Facts)
	fmt.Fprintf(w, "\nReferences:\n")
	list(r.References)
	fmt.Fprintf(w, "\n%s\n", strings.Join(Wrap("Defined at "+esc(r.Location), width), "\n"))
}
