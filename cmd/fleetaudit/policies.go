package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
)

func newPoliciesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "List and explain the rules of the policy library",
		Example: `  fleetaudit policies list --fleet gpu-training
  fleetaudit policies explain hugetlb-cma-on-gpu`,
	}
	cmd.PersistentFlags().StringSlice("policies", nil, "directory of Rego policies beside the built-in library (repeatable)")
	cmd.PersistentFlags().StringSlice("fleets", nil, "fleet profile YAML file or directory of them, beside the built-in ones (repeatable)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List rules: id, severity, profiles, title",
		Example: `  fleetaudit policies list
  fleetaudit policies list --fleet web-serving --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runPoliciesList(cmd) },
	}
	list.Flags().String("format", "table", "output format: table or json")
	list.Flags().String("fleet", "", "only the rules this fleet profile runs")

	explain := &cobra.Command{
		Use:     "explain ID",
		Short:   "Explain one rule: why, detection, remediation, references, the facts it reads",
		Example: `  fleetaudit policies explain removeipc-enabled`,
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return a.runPoliciesExplain(cmd, args[0]) },
	}
	test := &cobra.Command{
		Use:   "test [DIR...]",
		Short: "Run the _test.rego files of the built-in library and of DIRs, as opa test does",
		Long: `test runs the Rego tests of the built-in library and of the given policy directories with
OPA's tester, compiled with fleetaudit's capabilities (no network builtins). Output is opa
test's. Exit status is fleetaudit's, as for every command: 0 when every test passes, 1 when
one fails, 2 when the policies do not load or compile.`,
		Example: `  fleetaudit policies test ./site-policies
  fleetaudit policies test -v`,
		RunE: func(cmd *cobra.Command, args []string) error {
			pass, err := policies.RunTests(cmd.Context(), a.out, append(a.v.GetStringSlice("policies"), args...), a.v.GetBool("verbose"))
			if err != nil {
				return err
			}
			if !pass {
				return exitCodeError{exitFindings}
			}
			return nil
		},
	}
	test.Flags().BoolP("verbose", "v", false, "list every test, as opa test -v")
	cmd.AddCommand(list, explain, test)
	return cmd
}

func (a *app) loadRules(cmd *cobra.Command) ([]policies.Rule, *fleets.Set, error) {
	set, err := fleets.Load(true, a.v.GetStringSlice("fleets")...)
	if err != nil {
		return nil, nil, inputError{err}
	}
	engine, err := policies.New(cmd.Context(), policies.Options{PolicyDirs: a.v.GetStringSlice("policies")})
	if err != nil {
		return nil, nil, inputError{err}
	}
	if err := set.Check(fleets.KnownOf(engine)); err != nil {
		return nil, nil, inputError{err}
	}
	return engine.Rules(), set, nil
}

// listedRule is a rule as a fleet runs it: with the profile's severity, and
// the rule's own when the profile overrode it.
type listedRule struct {
	policies.Rule
	SeverityOverride *policies.SeverityOverride `json:"severity_override,omitempty"`
}

func (a *app) runPoliciesList(cmd *cobra.Command) error {
	rules, set, err := a.loadRules(cmd)
	if err != nil {
		return err
	}
	listed := make([]listedRule, 0, len(rules))
	var excluded []string
	fleet := a.v.GetString("fleet")
	if fleet == "" {
		for _, r := range rules {
			listed = append(listed, listedRule{Rule: r})
		}
	} else {
		p, err := set.Resolve(fleet)
		if err != nil {
			return usageError{err}
		}
		for _, r := range rules {
			if !p.Selects(r) {
				if p.Excludes(r) {
					excluded = append(excluded, r.ID)
				}
				continue
			}
			lr := listedRule{Rule: r}
			if sev := p.Severity(r.ID, r.Severity); sev != r.Severity {
				lr.SeverityOverride = &policies.SeverityOverride{RuleSeverity: r.Severity, Profile: fleet}
				lr.Severity = sev
			}
			listed = append(listed, lr)
		}
	}
	switch format := a.v.GetString("format"); format {
	case "json":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(listed); err != nil {
			return err
		}
		_, err := a.out.Write(reports.EscapeJSON(buf.Bytes()))
		return err
	case "table":
		width := a.humanOptions("-").Width
		// Rule ids stay whole: people copy them into explain and profiles.
		cols := reports.Columns{Header: []string{"ID", "SEVERITY", "PROFILES", "TITLE"}, Width: width, MinWidths: []int{1 << 10}, Unbroken: []bool{true}, MinLast: 20}
		for _, r := range listed {
			sev := r.Severity
			if r.SeverityOverride != nil {
				sev += " (rule: " + r.SeverityOverride.RuleSeverity + ")"
			}
			cols.Rows = append(cols.Rows, []string{reports.Escape(r.ID), reports.Escape(sev), reports.Escape(strings.Join(r.Profiles, ", ")), reports.Escape(r.Title)})
		}
		if err := cols.Write(a.out); err != nil {
			return err
		}
		if len(excluded) > 0 {
			text := fmt.Sprintf("Excluded by profile %s: %s", fleet, strings.Join(excluded, ", "))
			fmt.Fprintf(a.out, "\n%s\n", strings.Join(reports.Wrap(reports.Escape(text), width), "\n"))
		}
		return nil
	default:
		return usageError{fmt.Errorf("--format %q: want table or json", format)}
	}
}

func (a *app) runPoliciesExplain(cmd *cobra.Command, id string) error {
	rules, _, err := a.loadRules(cmd)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if r.ID == id {
			writeExplanation(a.out, r, a.humanOptions("-").Width)
			return nil
		}
	}
	return usageError{fmt.Errorf("no rule has id %q: see 'fleetaudit policies list'", id)}
}

// writeExplanation prints a rule for a person: prose wrapped to width,
// everything from the rule's METADATA escaped (user rules are outside code).
func writeExplanation(w io.Writer, r policies.Rule, width int) {
	esc := reports.Escape
	para := func(text string) string {
		var lines []string
		for _, l := range reports.Wrap(reports.EscapeText(text), width-2) {
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
		head = strings.Join(reports.Wrap(head, width), "\n")
	}
	fmt.Fprintf(w, "%s\n%s\n\n", head, strings.Join(reports.Wrap(esc(r.Title), width), "\n"))
	fmt.Fprintf(w, "Why and detection:\n%s\n\n", para(r.Description))
	fmt.Fprintf(w, "Remediation:\n%s\n\n", para(r.Remediation))
	fmt.Fprintf(w, "Reads facts:\n")
	list(r.Facts)
	fmt.Fprintf(w, "\nReferences:\n")
	list(r.References)
	fmt.Fprintf(w, "\n%s\n", strings.Join(reports.Wrap("Defined at "+esc(r.Location), width), "\n"))
}
