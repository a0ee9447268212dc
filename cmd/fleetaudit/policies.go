package main

import (
	"fmt"

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

func (a *app) loadRules() ([]policies.Rule, *fleets.Set, error) {
	set, err := fleets.Load(true, a.v.GetStringSlice("fleets")...)
	if err != nil {
		return nil, nil, inputError{err}
	}
	// Metadata only: the rules are parsed, not compiled.
	cat, err := policies.ReadCatalog(a.v.GetStringSlice("policies"))
	if err != nil {
		return nil, nil, inputError{err}
	}
	if err := set.Check(fleets.KnownOf(cat)); err != nil {
		return nil, nil, inputError{err}
	}
	return cat.Rules(), set, nil
}

func (a *app) runPoliciesList(cmd *cobra.Command) error {
	rules, set, err := a.loadRules()
	if err != nil {
		return err
	}
	var profile *fleets.Profile
	fleet := a.v.GetString("fleet")
	if fleet != "" {
		if profile, err = set.Resolve(fleet); err != nil {
			return usageError{err}
		}
	}
	listed, excluded := reports.ListRules(rules, profile, fleet)
	switch format := a.v.GetString("format"); format {
	case "json":
		return reports.RuleListJSON(a.out, listed)
	case "table":
		return reports.RuleListTable(a.out, listed, excluded, fleet, a.humanOptions("-").Width)
	default:
		return usageError{fmt.Errorf("--format %q: want table or json", format)}
	}
}

func (a *app) runPoliciesExplain(cmd *cobra.Command, id string) error {
	rules, _, err := a.loadRules()
	if err != nil {
		return err
	}
	for _, r := range rules {
		if r.ID == id {
			reports.ExplainRule(a.out, r, a.humanOptions("-").Width)
			return nil
		}
	}
	return usageError{fmt.Errorf("no rule has id %q: see 'fleetaudit policies list'", id)}
}
