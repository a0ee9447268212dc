package reports

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub test reporters):
// a test suite per fleet, a test case per rule. A case fails when the rule
// has unwaived findings in the fleet; waived findings are listed in the
// case's system-out and do not fail it.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Cases     []junitCase `xml:"testcase"`
	SystemErr string      `xml:"system-err,omitempty"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

func writeJUnit(w io.Writer, s junitSuites) error {
	for _, suite := range s.Suites {
		s.Tests += suite.Tests
		s.Failures += suite.Failures
		s.Errors += suite.Errors
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.WriteString("\n")
	// encoding/xml drops C0 controls; bidi and C1 ones become visible
	// escapes, as in the table.
	_, err := io.WriteString(w, EscapeText(buf.String()))
	return err
}

// junitCaseOf builds one rule's case from its findings in one fleet.
// failing are the findings that fail it, noted ones are listed without
// failing it (waived, or unchanged in a gate).
func junitCaseOf(fleet, rule, title string, failing []policies.Finding, noted map[string][]policies.Finding, checked string) junitCase {
	c := junitCase{Classname: "fleetaudit." + cmp.Or(fleet, "no-fleet"), Name: rule}
	if title != "" {
		c.Name = rule + ": " + title
	}
	if len(failing) > 0 {
		sev := ""
		hosts := []string{}
		seen := map[string]bool{} // a scan of hosts was quadratic in a large fleet
		var text strings.Builder
		for _, f := range failing {
			if policies.SeverityRank(f.Severity) > policies.SeverityRank(sev) {
				sev = f.Severity
			}
			if !seen[f.Host] {
				seen[f.Host] = true
				hosts = append(hosts, f.Host)
			}
			junitFindingText(&text, f)
		}
		msg := fmt.Sprintf("%d %s", len(failing), plural(len(failing), "finding", "findings"))
		if h := strings.Join(slices.DeleteFunc(hosts, func(s string) bool { return s == "" }), ""); h != "" {
			msg += fmt.Sprintf(" on %d %s: %s", len(hosts), plural(len(hosts), "host", "hosts"), foldHosts(hosts, 6))
		}
		c.Failure = &junitProblem{Message: Escape(msg), Type: sev, Text: text.String()}
	}
	var out strings.Builder
	if checked != "" {
		out.WriteString(checked + "\n")
	}
	for _, label := range slices.Sorted(maps.Keys(noted)) {
		for _, f := range noted[label] {
			out.WriteString(label + ": ")
			junitFindingText(&out, f)
		}
	}
	c.SystemOut = out.String()
	return c
}

func junitFindingText(b *strings.Builder, f policies.Finding) {
	who := f.Host
	if who == "" {
		who = f.Fleet
	}
	fmt.Fprintf(b, "[%s] %s: %s", Escape(f.Severity), Escape(who), Escape(f.Message))
	if p := provenance(f); p != "" {
		fmt.Fprintf(b, " (at %s)", Escape(p))
	}
	if f.Waived != nil {
		fmt.Fprintf(b, " [%s]", Escape(waivedLine(f.Waived)))
	}
	b.WriteString("\n")
}

// junitRenderer: a suite per fleet, a case per rule the fleet runs (the
// catalog's, else those with findings); collection errors are error cases.
type junitFormat struct{}

func (junitFormat) Name() string       { return "junit" }
func (junitFormat) Streams() bool      { return false }
func (junitFormat) NeedsCatalog() bool { return true }
func (junitFormat) Compliance() bool   { return false }

func (junitFormat) Render(w io.Writer, r *audit.Result, opts Options) error {
	byFleet := map[string][]policies.Finding{}
	for _, f := range r.Findings {
		byFleet[f.Fleet] = append(byFleet[f.Fleet], f)
	}
	// skipped: fleet -> rule -> whether an image -> hosts the rule did not run on.
	skipped := map[string]map[string]map[bool][]string{}
	for h := range hostRuns(r) {
		for _, id := range h.Skipped {
			if skipped[h.Fleet] == nil {
				skipped[h.Fleet] = map[string]map[bool][]string{}
			}
			if skipped[h.Fleet][id] == nil {
				skipped[h.Fleet][id] = map[bool][]string{}
			}
			skipped[h.Fleet][id][h.Image] = append(skipped[h.Fleet][id][h.Image], h.Host)
		}
	}
	suites := junitSuites{Name: "fleetaudit audit"}
	for _, name := range slices.Sorted(maps.Keys(r.Summary.Fleets)) {
		suite := junitSuite{Name: cmp.Or(name, "(no fleet)")}
		var rules []string
		if opts.Catalog != nil {
			rules = slices.Clone(opts.Catalog.FleetRules[name])
		}
		byRule := map[string][]policies.Finding{}
		for _, f := range byFleet[name] {
			if !slices.Contains(rules, f.Rule) {
				rules = append(rules, f.Rule)
			}
			byRule[f.Rule] = append(byRule[f.Rule], f)
		}
		slices.Sort(rules)
		for _, rule := range rules {
			var failing, waived []policies.Finding
			for _, f := range byRule[rule] {
				if f.Waived != nil {
					waived = append(waived, f)
				} else {
					failing = append(failing, f)
				}
			}
			title := ""
			if opts.Catalog != nil {
				title = opts.Catalog.Rules[rule].Title
			}
			if len(byRule[rule]) > 0 {
				title = cmp.Or(byRule[rule][0].Title, title)
			}
			c := junitCaseOf(name, rule, Escape(title), failing, map[string][]policies.Finding{"waived": waived}, "")
			if rule == "collection-error" && c.Failure != nil {
				c.Error, c.Failure = c.Failure, nil
				suite.Errors++
			} else if c.Failure != nil {
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
		for _, c := range junitSkippedCases(name, skipped[name]) {
			suite.Cases = append(suite.Cases, c)
			suite.Skipped++
		}
		suite.Tests = len(suite.Cases)
		suites.Suites = append(suites.Suites, suite)
	}
	if notices := waiverNotices(r.Waivers); len(notices) > 0 {
		suites.Suites = append(suites.Suites, junitSuite{Name: "waivers", SystemErr: escapeLines(notices)})
	}
	return writeJUnit(w, suites)
}

// junitGate: a suite per fleet, a case per rule with findings at either
// side; a case fails on introduced findings only, unchanged and resolved
// ones are listed in its output. A fleet that could not be gated is an
// error case.
func (junitFormat) RenderGate(w io.Writer, r *configrepo.Result, _ Options) error {
	suites := junitSuites{Name: "fleetaudit gate"}
	for _, fl := range r.Fleets {
		suite := junitSuite{Name: fl.Fleet}
		byRule := map[string]map[string][]policies.Finding{}
		add := func(kind string, fs []policies.Finding) {
			for _, f := range fs {
				if byRule[f.Rule] == nil {
					byRule[f.Rule] = map[string][]policies.Finding{}
				}
				if kind == "introduced" && f.Waived != nil {
					kind = "introduced, waived"
				}
				byRule[f.Rule][kind] = append(byRule[f.Rule][kind], f)
			}
		}
		add("introduced", fl.Introduced)
		add("unchanged", fl.Unchanged)
		add("resolved", fl.Resolved)
		for _, rule := range slices.Sorted(maps.Keys(byRule)) {
			kinds := byRule[rule]
			failing := kinds["introduced"]
			delete(kinds, "introduced")
			title := ""
			for _, fs := range kinds {
				title = cmp.Or(title, fs[0].Title)
			}
			if len(failing) > 0 {
				title = failing[0].Title
			}
			c := junitCaseOf(fl.Fleet, rule, Escape(title), failing, kinds, "")
			if c.Failure != nil {
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
		if fl.Status == "error" {
			var msgs []string
			for _, e := range r.Errors {
				if e.Fleet == fl.Fleet {
					msgs = append(msgs, e.Ref+": "+e.Error)
				}
			}
			suite.Cases = append(suite.Cases, junitCase{Classname: "fleetaudit." + fl.Fleet, Name: "render and audit",
				Error: &junitProblem{Message: "the fleet could not be gated", Type: "error", Text: escapeLines(msgs)}})
			suite.Errors++
		}
		suite.Tests = len(suite.Cases)
		suites.Suites = append(suites.Suites, suite)
	}
	notes := append(slices.Clone(r.Warnings), waiverNotices(r.Waivers)...)
	if len(notes) > 0 {
		suites.Suites = append(suites.Suites, junitSuite{Name: "notices", SystemErr: escapeLines(notes)})
	}
	return writeJUnit(w, suites)
}

// junitSkippedCases are a fleet's rules that did not run on some hosts: a
// skipped case per rule and reason, naming the hosts, apart from the
// rule's own case, which judges the hosts it ran on.
func junitSkippedCases(fleet string, rules map[string]map[bool][]string) []junitCase {
	var cases []junitCase
	for _, rule := range slices.Sorted(maps.Keys(rules)) {
		for _, image := range []bool{true, false} {
			hosts := rules[rule][image]
			if len(hosts) == 0 {
				continue
			}
			slices.Sort(hosts)
			msg := fmt.Sprintf("%s on %d %s: %s", skippedMessage(image), len(hosts), plural(len(hosts), "host", "hosts"), foldHosts(hosts, 6))
			cases = append(cases, junitCase{Classname: "fleetaudit." + cmp.Or(fleet, "no-fleet"), Name: Escape(rule) + " (not evaluated)",
				Skipped: &junitSkipped{Message: Escape(msg)}})
		}
	}
	return cases
}

// escapeLines escapes each line and joins them, one per line.
func escapeLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(Escape(l) + "\n")
	}
	return b.String()
}
