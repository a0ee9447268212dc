package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/strictyaml"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// addWaiverFlags adds --waivers (audit and gate); the audit also gets
// --group-by for its table and Markdown.
func addWaiverFlags(f *pflag.FlagSet, defaultWhere string) {
	f.String("waivers", "", "waivers file (rule, scope, owner, justification, expiry); default: "+defaultWhere+" when it exists")
}

func addGroupByFlag(cmd *cobra.Command) {
	cmd.Flags().String("group-by", "", fmt.Sprintf("table and markdown layout: %s (default: rule above %d hosts, else none)",
		strings.Join(reports.GroupModes, ", "), reports.GroupAutoHosts))
	_ = cmd.RegisterFlagCompletionFunc("group-by", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(reports.GroupModes, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// auditWaivers loads --waivers, else ./waivers.yaml when there is one.
func (a *app) auditWaivers() (*waivers.Set, error) {
	name := a.v.GetString("waivers")
	if name == "" {
		if _, err := os.Lstat(waivers.DefaultFile); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		name = waivers.DefaultFile
	}
	set, err := waivers.Load(name)
	if err != nil {
		return nil, inputError{err}
	}
	if err := checkOutput(a.v.GetString("output"), inputsOf("--waivers", []string{name}, 0)); err != nil {
		return nil, err
	}
	return set, nil
}

// gateWaivers loads --waivers, else waivers.yaml at the base commit: a
// change cannot waive its own findings; a waiver takes effect once merged.
// An invalid file at base is no waiver at all and a warning (the gate is
// then stricter, never laxer), so the change that repairs it can pass.
func (a *app) gateWaivers(base *configrepo.Checkout) (set *waivers.Set, warning string, err error) {
	if name := a.v.GetString("waivers"); name != "" {
		set, err := waivers.Load(name)
		if err != nil {
			return nil, "", inputError{err}
		}
		return set, "", checkOutput(a.v.GetString("output"), inputsOf("--waivers", []string{name}, 0))
	}
	if why, ok := base.Refused[waivers.DefaultFile]; ok {
		return nil, fmt.Sprintf("%s at %s is not read (%s): no waiver applies", waivers.DefaultFile, base.Label(), why), nil
	}
	f, ok := base.Files[waivers.DefaultFile]
	if !ok {
		return nil, "", nil
	}
	set, err = waivers.Parse(fmt.Sprintf("%s@%.12s", waivers.DefaultFile, base.Commit), f.Data)
	if err != nil {
		return nil, fmt.Sprintf("%v: no waiver applies", err), nil
	}
	return set, "", nil
}

// logWaivers says what needs attention on stderr too: expired waivers
// (their findings count again), stale ones, and, when the rules are known,
// a waiver naming no rule (a typo never matches).
func (a *app) logWaivers(rep *waivers.Report, rules ...policies.Rule) {
	if rep == nil {
		return
	}
	var ids []string
	for _, r := range rules {
		ids = append(ids, r.ID)
	}
	for _, st := range rep.Waivers {
		switch st.State {
		case waivers.Expired:
			a.log.Warn("waiver expired: its findings count again", "waiver", st.Source, "rule", st.Rule, "expired", st.Expires, "owner", st.Owner, "findings", st.Matched)
		case waivers.Stale:
			if len(ids) > 0 && !slices.Contains(ids, st.Rule) {
				a.log.Warn("waiver names no rule"+strictyaml.DidYouMean(st.Rule, ids, ""), "waiver", st.Source, "rule", st.Rule)
				continue
			}
			a.log.Warn("waiver matches no finding (stale)", "waiver", st.Source, "rule", st.Rule, "owner", st.Owner)
		}
	}
	if rep.Waived > 0 {
		a.log.Info("findings waived", "waived", rep.Waived, "file", rep.File)
	}
}

// reportCatalog is the rules' metadata (read, not compiled) and the rules
// each fleet profile runs.
func reportCatalog(set *fleets.Set, policyDirs []string) (*reports.Catalog, error) {
	cat, err := policies.ReadCatalog(policyDirs)
	if err != nil {
		return nil, err
	}
	return reports.NewCatalog(cat.Rules(), set)
}

// reportOptions adds what the compliance formats need to the terminal
// options. cat is the catalog when the caller has it (an audit's engine);
// else it is built for the formats that need one.
func (a *app) reportOptions(ctx context.Context, format reports.Format, out string, set *fleets.Set, cat *reports.Catalog, at time.Time) (reports.Options, error) {
	opts := a.humanOptions(out)
	opts.GroupBy = a.v.GetString("group-by")
	opts.Run.At = at
	opts.Catalog = cat
	if cat == nil && format.NeedsCatalog() {
		var err error
		if opts.Catalog, err = reportCatalog(set, a.v.GetStringSlice("policies")); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// applyGateWaivers marks head's findings (introduced and unchanged) that a
// waiver covers; resolved findings are gone at head and match nothing.
func applyGateWaivers(ws *waivers.Set, now time.Time, res *configrepo.Result) *waivers.Report {
	var lists [][]policies.Finding
	for _, f := range res.Fleets {
		lists = append(lists, f.Introduced, f.Unchanged)
	}
	return ws.Apply(now, lists...)
}
