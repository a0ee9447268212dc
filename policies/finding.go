package policies

// Severity levels, most severe first.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
	// SeverityInfo is for fleet profiles that demote a rule to a note.
	SeverityInfo = "info"
)

// SeverityRank orders severities from critical (5) to info (1); anything
// else is 0.
func SeverityRank(s string) int {
	switch s {
	case SeverityCritical:
		return 5
	case SeverityHigh:
		return 4
	case SeverityMedium:
		return 3
	case SeverityLow:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Finding is one rule firing on one host.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Host     string `json:"host"`
	Fleet    string `json:"fleet"`
	Message  string `json:"message"`
	// Evidence is every fact the rule cited, with the value the snapshot
	// holds and where that value was set.
	Evidence    []Evidence `json:"evidence"`
	Remediation string     `json:"remediation"`
	References  []string   `json:"references"`
	// Expected and Basis are set by fleet-wide rules: the value the host
	// should hold and how it was chosen ("baseline", "majority", or "none"
	// when the fleet has no consensus).
	Expected any    `json:"expected,omitempty"`
	Basis    string `json:"basis,omitempty"`
	// Fix is the rule's structured remediation, for the remediator.
	Fix map[string]any `json:"fix,omitempty"`
	// SeverityOverride is set when the fleet's profile changed the severity
	// the rule gave: a reader sees both the rule's view and the site's.
	SeverityOverride *SeverityOverride `json:"severity_override,omitempty"`
	// Waived is set when a waiver (package waivers) covers the finding: it
	// is still reported, and does not count toward --fail-on.
	Waived *Waived `json:"waived,omitempty"`
}

// Waived is the waiver that covers a finding.
type Waived struct {
	Owner         string `json:"owner"`
	Justification string `json:"justification"`
	Expires       string `json:"expires"`
	// Source is the waiver's FILE:LINE.
	Source string `json:"source"`
}

// SeverityOverride records a profile's severity override on a finding.
type SeverityOverride struct {
	// RuleSeverity is what the rule itself said.
	RuleSeverity string `json:"rule_severity"`
	// Profile is the fleet profile that set Finding.Severity.
	Profile string `json:"profile"`
}

// Evidence is one fact a finding cites.
type Evidence struct {
	// Fact is the fact path, e.g. "boot.configured.params.hugetlb_cma".
	Fact string `json:"fact"`
	// Value is the fact's value in the snapshot, nil when absent.
	Value any `json:"value"`
	// Source is where the value was set ("file:line"), from the snapshot's
	// sources for the fact or its nearest ancestor; "" when unknown.
	Source string `json:"source,omitempty"`
}
