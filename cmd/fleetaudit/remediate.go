package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/remediate"
	"github.com/fleetaudit/fleetaudit/remediate/githubpr"
	"github.com/fleetaudit/fleetaudit/reports"
)

// remediateFormats are the formats of remediate.
var remediateFormats = []string{"json", "table"}

func newRemediateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remediate",
		Short: "Propose the narrowest fix for each finding, proven by the gate, as a diff or a pull request",
		Long: `remediate turns findings into config repo changes. For each (rule, fleet) group it takes the
fix the rule attached, places it in the layers of that fleet that no unaffected fleet uses (a
drop-in such as etc/default/grub.d/99-fleetaudit.cfg or etc/sysctl.d/99-fleetaudit.conf, edited in
place when it exists; a new layer of the fleet's own in fleetaudit.yaml when every layer it
stacks is shared), applies it to a copy of --base held in memory, and gates base against the
copy: every finding of the group must be resolved and nothing introduced in any fleet.
A fix that cannot be placed or is not proven is refused with the reason, never proposed.

Findings come from the repo itself (its fleets rendered and audited at --base), or with
--findings from an audit's JSON report (fleetaudit audit --format json): each finding goes to
the repo fleet named by its fleet (or judged by that profile), and the group lists its hosts.

--dry-run prints, per group, the findings, the placement, the gate's proof and a unified diff
that git apply takes on --base; nothing is written. --github OWNER/REPO pushes one branch
(fleetaudit/fix/<rule>/<fleet>) and opens or updates one pull request per proven group, with
the token from GITHUB_TOKEN (never a flag; never printed). A rerun updates its own branch and
PR; a branch holding a person's commit or a PR closed unmerged is left alone and said so.
Branches are written through GitHub's Git Data API, or with --push git by git itself over
HTTPS (the token in git's environment, never its arguments), which Gitea and Forgejo need:
their Git Data API cannot write. --push auto picks git for an API URL ending in /api/v1.

Exit status: 0 when every group was proven (or there was nothing to fix), 1 when a group was
refused (the reason is printed: a person must fix it), 2 on a usage error, when the repo could
not be read, or when a pull request could not be published.`,
		Example: `  # What would fix the repo's own findings, and the proof, without writing anything
  fleetaudit remediate --repo examples/config-repo --dry-run

  # One rule in one fleet, as JSON
  fleetaudit remediate --repo . --rule hugetlb-cma-on-gpu --fleet gpu-training --dry-run --format json

  # From last night's audit: one fix per (rule, fleet), listing the hosts
  fleetaudit audit --inventory hosts.ini --snapshots snaps/ --format json -o audit.json
  fleetaudit remediate --repo . --findings audit.json --dry-run

  # Open the pull requests (GITHUB_TOKEN needs contents:write and pull_requests:write)
  GITHUB_TOKEN=... fleetaudit remediate --repo . --findings audit.json --github acme/fleet-config --max-open-prs 5

  # The same on a Gitea server (branches pushed with git, pull requests through its API)
  GITHUB_TOKEN=... fleetaudit remediate --repo . --github ops/fleet-config --github-api https://git.example.com/api/v1/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runRemediate(cmd) },
	}
	f := cmd.Flags()
	f.String("repo", ".", "config repo directory (a git work tree holding fleetaudit.yaml); it is never written")
	f.String("base", "HEAD", "git ref the fixes apply to and are proven against")
	f.String("rule", "", "only this rule id")
	f.String("fleet", "", "only this fleet of fleetaudit.yaml")
	f.String("findings", "", "an audit's JSON report: fix the findings seen on live hosts (default: the repo's own findings)")
	f.Bool("dry-run", false, "print the proposals (findings, placement, proof, diff); write nothing")
	f.String("format", "table", "output format: "+strings.Join(remediateFormats, ", "))
	f.String("github", "", "OWNER/REPO: push a branch and open or update a pull request per proven fix (token from GITHUB_TOKEN)")
	f.String("github-api", "", "API URL of GitHub Enterprise Server or a GitHub-compatible forge (default: api.github.com)")
	f.String("push", "auto", "how branches are written: api (GitHub's Git Data API), git (git push over HTTPS with the token; Gitea, Forgejo), auto (git when --github-api ends in /api/v1, else api)")
	f.Duration("api-timeout", githubpr.DefaultRequestTimeout, "give up on a request to the forge (API call, or git over HTTPS stalled below 1 KiB/s) after this long; failed requests are retried at most twice")
	f.Int("max-open-prs", 0, "open no new pull request while this many fleetaudit pull requests are open (0: no cap)")
	f.StringSlice("fleets", nil, "fleet profile YAML file or directory of them, beside the built-in ones (repeatable)")
	f.StringSlice("policies", nil, "directory of Rego policies and data files, beside the built-in library (repeatable)")
	addRuleTimeoutFlag(f, "the gate's, each rendered fleet one host; a fix whose proof has a rule that runs past it is refused")
	return cmd
}

func (a *app) runRemediate(cmd *cobra.Command) error {
	v := a.v
	format := v.GetString("format")
	if format != "table" && format != "json" {
		return usageError{fmt.Errorf("--format %q: want one of %s", format, strings.Join(remediateFormats, ", "))}
	}
	dryRun, gh := v.GetBool("dry-run"), v.GetString("github")
	var owner, repoName string
	switch {
	case dryRun && gh != "":
		return usageError{errors.New("--dry-run and --github: choose one (--dry-run writes nothing, --github opens pull requests)")}
	case !dryRun && gh == "":
		return usageError{errors.New("say what to do: --dry-run prints the proposals, --github OWNER/REPO opens pull requests; nothing else writes")}
	case gh != "":
		var ok bool
		owner, repoName, ok = strings.Cut(gh, "/")
		if !ok || owner == "" || repoName == "" || strings.Contains(repoName, "/") {
			return usageError{fmt.Errorf("--github %q: want OWNER/REPO", gh)}
		}
		if a.getenv("GITHUB_TOKEN") == "" {
			return usageError{errors.New("--github needs a token in GITHUB_TOKEN (contents:write and pull_requests:write)")}
		}
	}
	push := v.GetString("push")
	switch push {
	case "auto":
		if strings.HasSuffix(strings.TrimSuffix(v.GetString("github-api"), "/"), "/api/v1") {
			push = "git"
		} else {
			push = "api"
		}
	case "api", "git":
	default:
		return usageError{fmt.Errorf("--push %q: want auto, api or git", push)}
	}
	apiTimeout := v.GetDuration("api-timeout")
	if apiTimeout <= 0 {
		return usageError{fmt.Errorf("--api-timeout %s: want a positive duration", apiTimeout)}
	}
	if n := v.GetInt("max-open-prs"); n < 0 {
		return usageError{fmt.Errorf("--max-open-prs %d: want 0 (no cap) or more", n)}
	}
	repo := v.GetString("repo")
	if info, err := os.Stat(repo); err != nil || !info.IsDir() {
		return usageError{fmt.Errorf("--repo %s: not a directory", repo)}
	}
	set, err := fleets.Load(true, v.GetStringSlice("fleets")...)
	if err != nil {
		return usageError{err}
	}
	ruleTimeout, err := a.ruleTimeout()
	if err != nil {
		return err
	}
	opts := remediate.Options{
		Repo:        repo,
		Base:        v.GetString("base"),
		Rule:        v.GetString("rule"),
		Fleet:       v.GetString("fleet"),
		Fleets:      set,
		PolicyDirs:  v.GetStringSlice("policies"),
		RuleTimeout: ruleTimeout,
		Version:     version,
		Log:         a.log,
	}
	if file := v.GetString("findings"); file != "" {
		if opts.Audit, err = remediate.ReadAudit(file); err != nil {
			return usageError{err}
		}
	}
	plan, err := remediate.MakePlan(cmd.Context(), opts)
	if err != nil {
		return err
	}
	var published []githubpr.Result
	var publishErr error
	if gh != "" {
		client, err := githubpr.NewClient(cmd.Context(), a.getenv("GITHUB_TOKEN"), v.GetString("github-api"), githubpr.NewHTTPClient(githubpr.Timeouts{Request: apiTimeout}))
		if err != nil {
			return usageError{fmt.Errorf("--github-api: %w", err)}
		}
		popts := githubpr.Options{MaxOpenPRs: v.GetInt("max-open-prs"), Log: a.log}
		if push == "git" {
			popts.Git = &githubpr.GitTransport{Token: a.getenv("GITHUB_TOKEN"), Timeout: apiTimeout}
		}
		published, publishErr = githubpr.New(client, owner, repoName, popts).Publish(cmd.Context(), plan.Proposals())
	}
	if format == "json" {
		err = reports.WriteRemediateJSON(a.out, plan, published, gh != "")
	} else {
		err = reports.WriteRemediateTable(a.out, plan, published, gh != "", a.humanOptions("-").Width)
	}
	if err != nil {
		return err
	}
	a.log.Info("remediate", "proposals", len(plan.Proposals()), "refused", plan.Refused(), "skipped", len(plan.Skipped))
	if publishErr != nil {
		return publishErr
	}
	failed := 0
	for _, r := range published {
		if r.Action == githubpr.ActionFailed {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d %s could not be published (see above)", failed, plural(failed, "pull request", "pull requests"))
	}
	if plan.Refused() > 0 {
		return exitCodeError{exitFindings}
	}
	return nil
}

// completeRepoFleets offers the fleets of --repo's fleetaudit.yaml (as the
// work tree has it): remediate's --fleet names a repo fleet, not a profile.
func completeRepoFleets(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	repo, _ := cmd.Flags().GetString("repo")
	data, err := safeio.ReadFile(filepath.Join(repo, configrepo.ManifestFile), 1<<20)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	m, err := configrepo.ParseManifest(data)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(m.FleetNames(), toComplete), cobra.ShellCompDirectiveNoFileComp
}
