package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
)

// listFormats are the formats of policies list.
var listFormats = []string{"json", "table"}

// registerCompletions makes shell completion complete values, not only
// flag names: formats per command, --fail-on levels, --log-level, fleet
// profile names (built-in and --fleets) and rule ids (built-in and
// --policies). Completion runs no PersistentPreRun, so values come from the
// flags on the command line being completed, never from the config file.
func registerCompletions(root *cobra.Command) {
	formats := map[string][]string{
		"fleetaudit audit":         reports.Formats(),
		"fleetaudit gate":          reports.GateFormats(),
		"fleetaudit policies list": listFormats,
		"fleetaudit remediate":     remediateFormats,
	}
	fixed := func(values []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = root.RegisterFlagCompletionFunc("log-level", fixed([]string{"debug", "info", "warn", "error"}))
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		f := cmd.LocalNonPersistentFlags()
		if f.Lookup("format") != nil {
			if values, ok := formats[cmd.CommandPath()]; ok {
				_ = cmd.RegisterFlagCompletionFunc("format", fixed(values))
			}
		}
		if f.Lookup("fail-on") != nil {
			_ = cmd.RegisterFlagCompletionFunc("fail-on", fixed(failOnLevels))
		}
		if f.Lookup("fleet") != nil {
			if cmd.CommandPath() == "fleetaudit remediate" {
				_ = cmd.RegisterFlagCompletionFunc("fleet", completeRepoFleets)
			} else {
				_ = cmd.RegisterFlagCompletionFunc("fleet", completeFleets)
			}
		}
		for _, name := range []string{"rule", "rules"} {
			if f.Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, completeRuleIDs)
			}
		}
		for _, name := range []string{"root", "repo"} {
			if fl := f.Lookup(name); fl != nil && fl.Value.Type() == "string" {
				_ = cmd.MarkFlagDirname(name)
			}
		}
		if cmd.CommandPath() == "fleetaudit policies explain" {
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return completeRuleIDs(cmd, args, toComplete)
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeFleets offers every fleet profile: built-in and from --fleets.
func completeFleets(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	set, err := fleets.Load(true, flagPaths(cmd, "fleets")...)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return withPrefix(set.Names(), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeRuleIDs offers every rule id, built-in and from --policies, each
// with its title for shells that show descriptions.
func completeRuleIDs(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	cat, err := policies.ReadCatalog(flagPaths(cmd, "policies"))
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, r := range cat.Rules() {
		if strings.HasPrefix(r.ID, toComplete) {
			out = append(out, r.ID+"\t"+strings.Join(strings.Fields(reports.Escape(r.Title)), " "))
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

func withPrefix(values []string, prefix string) []string {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// flagPaths are a repeatable flag's values once each: cobra's __complete
// parses the command line twice, so a slice flag holds every value twice.
func flagPaths(cmd *cobra.Command, name string) []string {
	values, _ := cmd.Flags().GetStringSlice(name)
	var out []string
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
