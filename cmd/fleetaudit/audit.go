package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/reports"
	"github.com/fleetaudit/fleetaudit/sshsource"
	"github.com/fleetaudit/fleetaudit/waivers"
)

var failOnLevels = []string{"critical", "high", "medium", "low", "none"}

func newAuditCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Audit hosts against the hazard rules of their fleet",
		Long: `audit collects or reads one snapshot per host, gives each host its fleet (the inventory's,
else the first fleet profile that matches its groups, labels or name), evaluates the rules
that fleet enables with its parameters, and reports every finding with the file and line
that set the value.

Hosts come from --inventory (hosts with a root directory are collected, and hosts with an
address over SSH unless --snapshots is given: see docs/ssh.md), --snapshots (files
written by 'fleetaudit collect', or directories of them) and --root (one host per
directory, read as 'fleetaudit collect --root' reads it: on this machine's own / that
includes nvidia-smi for GPU persistence mode, unless --no-exec). A host that cannot be
read is reported as a collection-error finding and the rest of the fleet is still audited.

Exit status: 0 when no finding is at or above --fail-on, 1 when one is, 2 on a usage error
or when nothing could be audited.` + kubeHelp,
		Example: `  # The bundled example fleet: its inventory, and the snapshots collected from it
  fleetaudit audit --inventory examples/fleet/inventory.yaml --snapshots examples/fleet/snapshots

  # Snapshots collected elsewhere, as JSON for CI, failing on critical findings only
  fleetaudit audit --snapshots /var/lib/fleetaudit/snapshots --format json -o findings.json --fail-on critical

  # A whole fleet over SSH, 50 hosts at a time, from an Ansible inventory
  fleetaudit audit --inventory hosts.ini --parallel 50

  # The compliance report for platform review, accepted findings waived
  fleetaudit audit --inventory hosts.ini --snapshots snaps/ --waivers waivers.yaml --format html -o compliance.html

  # A large fleet, one row per rule with its hosts folded
  fleetaudit audit --snapshots snaps/ --group-by rule

  # Site profiles and policies beside the built-in ones
  fleetaudit audit --inventory hosts.ini --fleets ./fleets --policies ./policies` + kubeExamples,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runAudit(cmd) },
	}
	f := cmd.Flags()
	f.String("inventory", "", "inventory file: native YAML, Ansible YAML or Ansible INI")
	f.StringSlice("snapshots", nil, "snapshot file or directory of *.json snapshots (repeatable)")
	f.StringSlice("root", nil, "directory to collect as one host's / (repeatable)")
	f.Bool("no-exec", false, "run no command (nvidia-smi) when a --root is this machine's own /; only files are read, as collect --no-exec")
	addRuleTimeoutFlag(f, "a rule that runs past it is a collection-error finding")
	addReportFlags(f, reports.Formats(), "exit 1 when a finding is at or above")
	addSSHFlags(f)
	addWaiverFlags(f, "./"+waivers.DefaultFile)
	addRecordFlags(f)
	addGroupByFlag(cmd)
	addKubeAuditFlags(f)
	return cmd
}

// addReportFlags adds the flags audit and gate share, meaning the same in both.
func addReportFlags(f *pflag.FlagSet, formats []string, failOnHelp string) {
	f.String("format", "table", "output format: "+strings.Join(formats, ", "))
	f.StringP("output", "o", "-", "write the report to FILE (- for stdout): a file is replaced atomically keeping its mode, a FIFO or device written through")
	f.String("fail-on", "high", failOnHelp+": "+strings.Join(failOnLevels, ", "))
	f.StringSlice("fleets", nil, "fleet profile YAML file or directory of them, beside the built-in ones (repeatable)")
	f.StringSlice("policies", nil, "directory of Rego policies and data files, beside the built-in library (repeatable)")
}

// addRuleTimeoutFlag adds --rule-timeout, the rule budget audit, gate and
// remediate share; past says what a rule that runs past it does.
func addRuleTimeoutFlag(f *pflag.FlagSet, past string) {
	f.Duration("rule-timeout", fleetrun.DefaultHostTimeout, "evaluation budget per host (and per fleet for fleet-wide rules); "+past+" (0: no limit)")
}

// ruleTimeout is --rule-timeout as the options take it: 0 on the command
// line is no limit, which the options spell as negative.
func (a *app) ruleTimeout() (time.Duration, error) {
	switch timeout := a.v.GetDuration("rule-timeout"); {
	case timeout < 0:
		return 0, usageError{fmt.Errorf("--rule-timeout %s: want a positive duration, or 0 for no limit", timeout)}
	case timeout == 0:
		return -1, nil
	default:
		return timeout, nil
	}
}

// reportInputs checks --fail-on and loads --fleets and --inventory.
func (a *app) reportInputs() (failOn string, set *fleets.Set, inv *inventory.Inventory, err error) {
	v := a.v
	failOn = v.GetString("fail-on")
	if !slices.Contains(failOnLevels, failOn) {
		return "", nil, nil, usageError{fmt.Errorf("--fail-on %q: want one of %s", failOn, strings.Join(failOnLevels, ", "))}
	}
	if set, err = fleets.Load(true, v.GetStringSlice("fleets")...); err != nil {
		return "", nil, nil, inputError{err}
	}
	if file := v.GetString("inventory"); file != "" {
		if inv, err = inventory.Load(file); err != nil {
			return "", nil, nil, inputError{err}
		}
	}
	return failOn, set, inv, nil
}

// failsOn reports whether a result whose worst finding has rank top fails
// the run under --fail-on.
func failsOn(failOn string, top int) bool {
	return failOn != "none" && top >= policies.SeverityRank(failOn)
}

func (a *app) runAudit(cmd *cobra.Command) error {
	v := a.v
	format := v.GetString("format")
	render, err := reports.Get(format)
	if err != nil {
		return usageError{fmt.Errorf("--format: %w", err)}
	}
	failOn, set, inv, err := a.reportInputs()
	if err != nil {
		return err
	}
	if err := checkOutput(v.GetString("output"), auditInputs(v)); err != nil {
		return err
	}
	if err := reports.CheckGroupBy(v.GetString("group-by")); err != nil {
		return usageError{fmt.Errorf("--group-by: %w", err)}
	}
	if cmd.Flags().Changed("group-by") && !reports.Groups(render) {
		// Asked for on the command line and dropped, the layout would
		// silently differ from what was asked.
		return usageError{fmt.Errorf("--group-by %s: --format %s ignores it; it lays out %s only", v.GetString("group-by"), format, orList(reports.GroupFormats()))}
	}
	ws, err := a.auditWaivers()
	if err != nil {
		return err
	}
	if err := a.shardOf(inv); err != nil {
		return err
	}
	var reached []inventory.Host
	if inv != nil && len(v.GetStringSlice("snapshots")) == 0 {
		reached = inv.Hosts // with --snapshots no host is reached: see audit's precedence
	}
	transports, ssh, progress, err := a.transports(reached, v.GetBool("no-exec"))
	if err != nil {
		return err
	}
	opts := audit.Options{
		Transports: transports,
		Fleets:     set,
		Inventory:  inv,
		Snapshots:  v.GetStringSlice("snapshots"),
		Roots:      v.GetStringSlice("root"),
		NoExec:     v.GetBool("no-exec"),
		PolicyDirs: v.GetStringSlice("policies"),
		Version:    version,
		Stream:     render.Streams(), // waivers and --record mark and write findings as they are read
		Sized:      setGCPercent,
		Log:        a.log,
	}
	if spec := v.GetString("shard"); spec != "" {
		// Snapshot files, nodes and manifests are split as shardOf
		// splits the inventory.
		sh, err := sshsource.ParseShard(spec)
		if err != nil {
			return usageError{fmt.Errorf("--shard: %w", err)}
		}
		opts.Shard = sh.Has
	}
	if ssh != nil {
		opts.Parallel = v.GetInt("parallel")
	}
	kr, err := a.kubeAuditOptions(cmd, set, &opts)
	if err != nil {
		return err
	}
	if opts.RuleTimeout, err = a.ruleTimeout(); err != nil {
		return err
	}
	if cmd.Flags().Changed("store") && !a.v.GetBool("record") {
		// Without --record nothing is written to the store: saying so beats
		// a run the user believes was kept.
		return usageError{fmt.Errorf("--store names where --record keeps the run; add --record, or drop --store")}
	}
	rec, err := a.startRecord(cmd.Context(), &opts)
	if err != nil {
		return err
	}
	res, err := audit.Run(cmd.Context(), opts)
	if progress != nil {
		progress.account(a.err)
		ssh.Dialer.Close()
	}
	if err != nil {
		rec.fail(cmd.Context(), err)
		if cmd.Context().Err() != nil {
			kept := ""
			if rec != nil {
				kept = "; the store keeps the run as failed"
			}
			return fmt.Errorf("the audit stopped before its report: no report was written%s (%w)", kept, err)
		}
		if errors.Is(err, audit.ErrNoInput) || errors.Is(err, audit.ErrNoSnapshots) {
			return usageError{err}
		}
		return err
	}
	now := time.Now()
	res.Waivers = res.ApplyWaivers(ws, now)
	a.logWaivers(res.Waivers, res.Rules...)
	if err := rec.finish(cmd.Context(), a, res, now); err != nil {
		return err
	}
	out := v.GetString("output")
	ropts, err := a.reportOptions(cmd.Context(), render, out, set, catalogOf(res), now)
	if err != nil {
		return err
	}
	ropts.OpenReports = a.openReportsOptions(kr)
	err = writeOutputWith(cmd.Context(), a, out, func(w io.Writer) error {
		if err := render.Render(w, res, ropts); err != nil {
			return fmt.Errorf("rendering %s: %w", format, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.log.Info("audited", "hosts", res.Summary.Audited, "unread", res.Summary.Unread, "findings", res.Summary.Findings, "errors", len(res.Errors))
	if err := a.publishReports(cmd.Context(), kr, res, ropts); err != nil {
		return err
	}
	if err := manifestsUnread(res.ManifestErrors); err != nil {
		return err
	}
	if res.Summary.Audited == 0 {
		// The report is written: it says why each host could not be read.
		return fmt.Errorf("no host could be audited: %d of %d could not be read (see the report's errors)", res.Summary.Unread, res.Summary.Hosts)
	}
	if failsOn(failOn, res.MaxSeverityRank()) {
		return exitCodeError{exitFindings}
	}
	return nil
}

// manifestsUnread fails a run for the --manifests files it could not read
// or parse, whatever --fail-on says: the report is written with what was
// read, but a job spec that was not judged must not pass a CI check.
func manifestsUnread(errs []audit.HostError) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = reports.Escape(e.Source + ": " + strings.Join(strings.Fields(e.Error), " "))
	}
	return fmt.Errorf("%d %s could not be read, so the audit is incomplete: %s", len(errs), plural(len(errs), "manifest", "manifests"), strings.Join(msgs, "; "))
}
