package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/waivers"
)

func newGateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Report the findings a config repo change introduces, per fleet",
		Long: `gate checks out the config repo at --base and at --head (the work tree when --head is not
given), renders every fleet named in fleetaudit.yaml by stacking its layers (a later layer's
file replaces an earlier one at the same path; .d directories merge by file name), audits each
rendered fleet with the rules of its profile, and reports the findings the change introduces,
resolves and leaves unchanged, per fleet, each with the repo file and line that set the value.

Findings are matched by rule and the facts they cite, not by message text: moving a setting to
another file leaves its finding unchanged. The repo's configuration is audited as what a host
would run after applying it, so rules about running sysctls see it; rules comparing running
with configured state do not apply. Facts a repo cannot know (driver, devices, libraries)
come from a fleet's baseline: snapshot, else they are absent and no rule fires on absence.

Symlinks and paths that leave the repo are refused. A render: command in fleetaudit.yaml
runs code from the change under review and runs only with --allow-render-command.

Each fleet is audited as audit audits a host, under the same --rule-timeout: a rule that runs
past it at base or head is a collection-error finding and an error naming the rule, since
whether the change adds a finding of it is unknown.

With --store (a history store, its latest complete run; --store=PATH for another file) or
--snapshots DIR, the gate also plans the change per host: each recorded host gets the repo's
files at base and at head laid over its own (a host's /etc/sysctl.d/99-local.conf still wins
over a repo file, as sysctl.d orders them), keeps its driver, devices and libraries, and is
audited with its fleet's profile. The plan names the hosts that newly fail (by rule and
severity, with the repo file and line), those fixed and those unchanged, host names folded
into ranges; hosts whose snapshot is older than --max-age, unread in their run, or of no
fleet the repo renders are listed as not planned, with why. docs/gate-plan.md has the rest.

Exit status: 0 when the change introduces no finding at or above --fail-on, 1 when it does,
2 on a usage error or when a fleet could not be rendered or audited in full.`,
		Example: `  # What does my uncommitted change do to each fleet?
  fleetaudit gate --repo examples/config-repo --base HEAD

  # Before committing (the pre-commit hook): the staged change against HEAD
  fleetaudit gate --repo . --base HEAD --staged

  # In CI on a pull request, as a PR comment
  fleetaudit gate --repo . --base origin/main --head HEAD --format markdown -o gate.md

  # For GitHub code scanning: findings at the repo file and line that set them
  fleetaudit gate --repo . --base origin/main --format sarif -o fleetaudit.sarif

  # Which recorded hosts the change breaks, from last night's audit --record
  fleetaudit gate --repo . --base origin/main --store=/var/lib/fleetaudit/store.db

  # Blast radius in hosts, failing only on critical findings
  fleetaudit gate --repo . --base origin/main --inventory hosts.ini --fail-on critical`,
		Args: gateArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runGate(cmd) },
	}
	f := cmd.Flags()
	f.String("repo", ".", "config repo directory (a git work tree holding fleetaudit.yaml)")
	f.String("base", "", "git ref the change starts from (required), e.g. origin/main")
	f.String("head", "", "git ref the change ends at (default: the work tree, uncommitted files included)")
	f.Bool("staged", false, "gate the staged change (the index, as git commit records it) instead of the work tree; unstaged edits are not read")
	f.String("inventory", "", "inventory counting each fleet's hosts for the blast radius (default: fleetaudit.yaml's inventory)")
	addReportFlags(f, reports.GateFormats(), "exit 1 when the change introduces a finding at or above")
	addWaiverFlags(f, waivers.DefaultFile+" at the --base commit")
	f.Bool("allow-render-command", false, "run the render: command of fleetaudit.yaml (code from the repo under review)")
	addRuleTimeoutFlag(f, "each rendered fleet is one host; a rule that runs past it is a collection-error finding and leaves the fleet not gated in full (exit 2)")
	addPlanFlags(f)
	return cmd
}

func (a *app) runGate(cmd *cobra.Command) error {
	v := a.v
	format := v.GetString("format")
	render, err := reports.GetGate(format)
	if err != nil {
		return usageError{fmt.Errorf("--format: %w", err)}
	}
	if v.GetString("base") == "" {
		return usageError{fmt.Errorf("--base is required: the ref the change starts from, e.g. --base origin/main")}
	}
	repo := v.GetString("repo")
	if info, err := os.Stat(repo); err != nil || !info.IsDir() {
		return usageError{fmt.Errorf("--repo %s: not a directory", repo)}
	}
	failOn, set, inv, err := a.reportInputs()
	if err != nil {
		return err
	}
	if err := checkOutput(v.GetString("output"), gateInputs(v)); err != nil {
		return err
	}
	ruleTimeout, err := a.ruleTimeout()
	if err != nil {
		return err
	}
	opts := configrepo.Options{
		Inventory:          inv,
		Repo:               repo,
		Base:               v.GetString("base"),
		Head:               v.GetString("head"),
		Fleets:             set,
		PolicyDirs:         v.GetStringSlice("policies"),
		AllowRenderCommand: v.GetBool("allow-render-command"),
		RuleTimeout:        ruleTimeout,
		Version:            version,
		Log:                a.log,
	}
	if err := a.stagedHead(cmd.Context(), &opts); err != nil {
		return err
	}
	plan, done, err := a.planOptions(cmd.Context(), v.GetString("output"))
	if err != nil {
		return err
	}
	defer done()
	opts.Plan = plan
	// The base is checked out once: the gate audits it, and its
	// waivers.yaml is the one that applies.
	if opts.BaseCheckout, err = configrepo.CheckoutRef(cmd.Context(), repo, opts.Base); err != nil {
		return fmt.Errorf("%s: %w", repo, err)
	}
	ws, warning, err := a.gateWaivers(opts.BaseCheckout)
	if err != nil {
		return err
	}
	if opts.Plan != nil {
		opts.Plan.Waivers = ws
	}
	res, err := configrepo.Run(cmd.Context(), opts)
	if err != nil {
		return err
	}
	now := time.Now()
	res.Waivers = applyGateWaivers(ws, now, res)
	if warning != "" {
		res.Warnings = append(res.Warnings, warning)
		a.log.Warn(warning)
	}
	a.logWaivers(res.Waivers)
	out := v.GetString("output")
	ropts, err := a.reportOptions(cmd.Context(), render, out, set, nil, now)
	if err != nil {
		return err
	}
	err = writeOutputWith(cmd.Context(), a, out, func(w io.Writer) error {
		if format == "markdown" {
			return a.renderGateMarkdown(w, render, res, ropts)
		}
		if err := render.RenderGate(w, res, ropts); err != nil {
			return fmt.Errorf("rendering %s: %w", format, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.log.Info("gated", "fleets", len(res.Fleets), "introduced", res.Summary.Introduced,
		"resolved", res.Summary.Resolved, "unchanged", res.Summary.Unchanged, "errors", len(res.Errors))
	if err := res.Incomplete(); err != nil {
		return err
	}
	if failsOn(failOn, res.MaxIntroducedRank()) {
		return exitCodeError{exitFindings}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
