// Package audit runs one audit: it gathers host snapshots (snapshot files,
// fixture or mounted roots, inventory hosts), gives each host its fleet,
// evaluates the policy library per fleet and returns a Result for the
// reports. Per-host failures are results, never aborts.
package audit

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/kube/cluster"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/transport"
	"github.com/fleetaudit/fleetaudit/transport/local"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// Schema identifies the findings document.
const Schema = "fleetaudit.findings/v1"

// Options configure one audit.
type Options struct {
	// Fleets are the fleet profiles (built-in plus --fleets).
	Fleets *fleets.Set
	// Inventory is optional; its hosts with a root are collected, and it
	// names fleets, groups and labels for matching.
	Inventory *inventory.Inventory
	// Snapshots are snapshot files or directories of them (*.json).
	Snapshots []string
	// Roots are directories collected as one host each (--root), as
	// collect would (collectors.Local): this machine's own "/" runs
	// nvidia-smi unless NoExec.
	Roots []string
	// NoExec runs no command on this machine when a root is "/".
	NoExec bool
	// PolicyDirs are user policy directories (--policies).
	PolicyDirs []string
	// Version is recorded in collected snapshots.
	Version string
	// RuleTimeout bounds the evaluation of one host's rules (and one
	// fleet's fleet-wide rules): fleetrun.DefaultHostTimeout when 0, no
	// limit when negative.
	RuleTimeout time.Duration
	// Loaded, if set, sees each host's snapshot document as the rules will
	// (see fleetrun.RunOptions.Loaded).
	Loaded func(in fleetrun.HostInput, doc, like map[string]any)
	// Transports read the inventory hosts collected during the run, each
	// by its connection type (transport.For): sshsource.Transport for SSH;
	// the local one is made from NoExec and Version unless given. A host
	// whose transport is not set up is reported as not collected.
	Transports transport.Set
	// Parallel bounds the hosts collected at once (the engine's workers
	// during a run) when above 0: as many as connections may be in flight.
	Parallel int
	// Cluster, when set, joins each host to its Kubernetes node and audits
	// the nodes no input names on what the cluster knows (see kube.go).
	Cluster *cluster.Cluster
	// Manifests are workload manifest files or directories audited without
	// a host, each as one host named by its path in ManifestFleet.
	Manifests     []string
	ManifestFleet string
	// Now stamps the snapshots made from the cluster alone or from
	// manifests; nil is time.Now.
	Now func() time.Time
	// Stream leaves Result.Findings nil: the findings are read, in order,
	// through Result.All, and a large fleet's are never all in memory
	// (reports that stream: json, table, markdown). Waivers then mark them as they
	// are read (Result.ApplyWaivers); All may be read more than once (the
	// history store records them, then a report renders them), each read
	// marking them alike.
	Stream bool
	// Shard, when set, keeps the snapshot files, cluster nodes and
	// manifests of the hosts it is true for (audit --shard; the command
	// keeps the inventory's hosts of the shard itself).
	Shard func(host string) bool
	// Sized, if set, is told how many hosts the run has found to read
	// (snapshot files and hosts to collect) before it reads any.
	Sized func(hosts int)
	Log   *slog.Logger
}

// Result is one audit's outcome.
type Result struct {
	Schema string `json:"schema"`
	// Findings are sorted by fleet, most severe first, then host and
	// rule; nil with Options.Stream (see All).
	Findings []policies.Finding `json:"findings"`
	Errors   []HostError        `json:"errors"`
	Summary  Summary            `json:"summary"`
	// Waivers is what a waivers file did to the findings (waivers.Set.Apply);
	// nil when none was read.
	Waivers *waivers.Report `json:"waivers,omitempty"`
	// Hosts are the hosts as the engine audited them (fleet, unread, rules
	// skipped), for reports that count per control, when the result was
	// not made by a live audit (the history store sets them); not in the
	// JSON. Read them with HostRuns, which also sees a live audit's.
	Hosts []fleetrun.HostRun `json:"-"`
	// Rules are the metadata of every rule the engine compiled, and
	// FleetRules the ids each fleet ran (controls that pass have no
	// finding to name them): for reports and the history store, not in
	// the JSON.
	Rules      []policies.Rule     `json:"-"`
	FleetRules map[string][]string `json:"-"`
	// ManifestErrors are the files of Options.Manifests that could not be
	// read or parsed (also in Errors): what was read is audited, but the
	// audit of a manifest is incomplete, which the command fails on.
	ManifestErrors []HostError `json:"-"`

	// audit yields the findings when they were not collected; mark, when
	// set, marks each as it is yielded (ApplyWaivers).
	audit *fleetrun.Audit
	mark  func(*policies.Finding)
}

// All yields the findings in Findings' order, also when they were not
// collected (Options.Stream). f is valid during the call only; when shared
// is not nil, f is *shared with another host's name, and a writer may
// encode shared once for every host that yields it.
func (r *Result) All() iter.Seq2[*policies.Finding, *policies.Finding] {
	return func(yield func(f, shared *policies.Finding) bool) {
		if r.audit == nil {
			for i := range r.Findings {
				if !yield(&r.Findings[i], nil) {
					return
				}
			}
			return
		}
		if r.mark == nil {
			r.audit.Each(yield)
			return
		}
		r.audit.Each(func(f, shared *policies.Finding) bool {
			r.mark(f)
			if f.Waived != nil {
				// The shared encoding is the unwaived one.
				shared = nil
			}
			return yield(f, shared)
		})
	}
}

// HostRuns yields the hosts as the engine audited them, in input order:
// a live audit's, made from its compact records as they are read (a large
// fleet's are never all held as HostRuns), else Hosts. It is nil when the
// result holds no host records (read back from its JSON).
func (r *Result) HostRuns() iter.Seq[fleetrun.HostRun] {
	if r.audit != nil {
		return r.audit.Hosts()
	}
	if r.Hosts == nil {
		return nil
	}
	return slices.Values(r.Hosts)
}

// ApplyWaivers marks the findings a waivers file covers (Finding.Waived,
// see waivers.Set.Apply) and returns what it did; nil for a nil set.
// Streamed findings are read once to count, then marked as All yields
// them.
func (r *Result) ApplyWaivers(ws *waivers.Set, now time.Time) *waivers.Report {
	if r.audit == nil || ws == nil {
		return ws.Apply(now, r.Findings)
	}
	rep, mark := ws.Stream(now, r.All())
	r.mark = mark
	return rep
}

// HostError is a host or input that could not be audited in full.
type HostError struct {
	Host  string `json:"host,omitempty"`
	Fleet string `json:"fleet,omitempty"`
	// Source is the snapshot file, root or address the host came from.
	Source string `json:"source,omitempty"`
	Error  string `json:"error"`
}

// Summary counts hosts and findings.
type Summary struct {
	// Hosts is every host of the run: Audited were read (in full or in
	// part), Unread could not be read at all and have only their
	// collection-error findings (see Errors).
	Hosts   int `json:"hosts"`
	Audited int `json:"audited"`
	Unread  int `json:"unread"`
	// RulesSkipped counts, per rule, the audited hosts on which the rule did
	// not run because facts it reads were not collected.
	RulesSkipped map[string]int          `json:"rules_skipped,omitempty"`
	Findings     int                     `json:"findings"`
	BySeverity   map[string]int          `json:"by_severity"`
	Fleets       map[string]FleetSummary `json:"fleets"`
}

// FleetSummary counts one fleet's hosts and findings; "" is hosts that
// match no fleet.
type FleetSummary struct {
	Hosts      int            `json:"hosts"`
	BySeverity map[string]int `json:"by_severity"`
}

// ErrNoInput is returned when there is nothing to audit.
var ErrNoInput = errors.New("nothing to audit: give --inventory, --snapshots, --root, --manifests or --kube")

// ErrNoSnapshots is returned (wrapped, naming the directory) for a
// --snapshots directory that holds no *.json file.
var ErrNoSnapshots = errors.New("the directory is empty: no *.json snapshot in it")

// Run audits every input host. It fails only for configuration errors (a
// policy that does not compile, no input at all) and a cancelled context.
func Run(ctx context.Context, opts Options) (*Result, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	files, err := snapshotFiles(opts.Snapshots)
	if err != nil {
		return nil, err
	}
	targets, err := collectTargets(opts, files)
	if err != nil {
		return nil, err
	}
	kj := newKubeJoin(opts, files, targets, log)
	if files.Len() == 0 && len(targets) == 0 && (opts.Inventory == nil || len(opts.Inventory.Hosts) == 0) && (opts.Cluster == nil || len(opts.Cluster.Nodes) == 0) && len(opts.Manifests) == 0 {
		return nil, ErrNoInput
	}
	if opts.Sized != nil {
		opts.Sized(files.Len() + len(targets))
	}
	engine, err := fleets.NewEngine(ctx, opts.Fleets, opts.PolicyDirs)
	if err != nil {
		return nil, err
	}
	fleetOf := newFleetResolver(opts.Fleets, opts.Inventory)
	for _, h := range manifestHosts(opts) {
		fleetOf.hosts[h.Name] = h
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	runOpts := fleetrun.RunOptions{FleetOf: fleetOf.fleet, FleetSections: fleets.MatchSections(), HostTimeout: opts.RuleTimeout, Loaded: opts.Loaded,
		Hosts: files.Len() + len(targets)}
	if opts.Parallel > 0 {
		// Hosts are collected inside the engine's workers.
		runOpts.Workers = opts.Parallel
	}
	var unreadable manifestErrors
	// Snapshot files, then the hosts collected during the run: each is read
	// or collected inside the engine's workers and goes straight in.
	inputs := func(yield func(fleetrun.HostInput) bool) {
		for f := range files.All() {
			if !inShard(opts.Shard, f) {
				continue
			}
			if !yield(kj.wrap(fleetrun.SnapshotFile(f))) {
				return
			}
		}
		for in := range collected(targets, inputsOf(opts), log) {
			if !yield(kj.wrap(in)) {
				return
			}
		}
		for in := range kj.nodes() {
			if opts.Shard != nil && !opts.Shard(in.Name) {
				continue
			}
			if !yield(in) {
				return
			}
		}
		for in := range manifestInputs(opts, now, &unreadable) {
			if opts.Shard != nil && !opts.Shard(in.Name) {
				continue
			}
			if !yield(in) {
				return
			}
		}
	}
	rep, err := fleetrun.RunAudit(ctx, engine, inputs, runOpts)
	if err != nil {
		return nil, err
	}
	if missing := missingHosts(opts.Inventory, rep.Hosts(), targets); len(missing) > 0 {
		// Inventory hosts nobody supplied are blind spots: audit them as
		// hosts whose collection failed, so they are findings too.
		runOpts.Hosts = len(missing)
		more, err := fleetrun.RunAudit(ctx, engine, collected(missing, inputsOf(opts), log), runOpts)
		if err != nil {
			return nil, err
		}
		rep.Append(more)
	}
	res := &Result{Schema: Schema, Errors: fleetOf.errors(),
		Rules: engine.Rules(), FleetRules: map[string][]string{}, audit: rep}
	for _, f := range rep.Failures {
		res.Errors = append(res.Errors, HostError{Host: f.Host, Fleet: f.Fleet, Source: f.File, Error: f.Err.Error()})
	}
	unread := map[[2]string]bool{}
	res.Summary = Summary{BySeverity: map[string]int{}, Fleets: map[string]FleetSummary{}}
	// One pass over the host records, made as they are read.
	for h := range rep.Hosts() {
		if _, ok := res.FleetRules[h.Fleet]; !ok {
			// A control that passes everywhere has no finding to show it.
			res.FleetRules[h.Fleet] = engine.FleetRules(h.Fleet)
		}
		fs := fleetSummary(&res.Summary, h.Fleet)
		fs.Hosts++
		res.Summary.Fleets[h.Fleet] = fs
		res.Summary.Hosts++
		if h.Unread != "" {
			unread[[2]string{h.Fleet, h.Host}] = true
			res.Summary.Unread++
			continue
		}
		res.Summary.Audited++
		for _, id := range h.Skipped {
			if res.Summary.RulesSkipped == nil {
				res.Summary.RulesSkipped = map[string]int{}
			}
			res.Summary.RulesSkipped[id]++
		}
	}
	if !opts.Stream {
		// Collected once, in report order; counted from the slice. The
		// host records stay in Hosts.
		res.Findings = []policies.Finding{}
		for f := range res.All() {
			res.Findings = append(res.Findings, *f)
		}
		res.Hosts = slices.Collect(rep.Hosts())
		res.audit = nil
	}
	if res.audit != nil && len(unread) == 0 {
		// Counted without making each host's copy: a large fleet's
		// findings are read once more, to write them.
		res.audit.Tally(func(f *policies.Finding, hosts int) { countN(&res.Summary, f, hosts) })
	} else {
		for f := range res.All() {
			count(&res.Summary, f)
			if len(unread) > 0 && f.Rule == "collection-error" && unread[[2]string{f.Fleet, f.Host}] {
				res.Errors = append(res.Errors, HostError{Host: f.Host, Fleet: f.Fleet, Error: f.Message})
			}
		}
	}
	res.ManifestErrors = unreadable.sorted()
	res.Errors = append(res.Errors, res.ManifestErrors...)
	if res.Errors == nil {
		res.Errors = []HostError{}
	}
	return res, nil
}

// target is a host to collect during the run: an inventory host, or a
// --root as a host with only a root, read through its transport.
type target struct {
	host inventory.Host
	// missing marks an inventory host that no input supplied.
	missing bool
}

// collectTargets are the hosts collected during the run, by one
// precedence: a host that a snapshot file describes is read from it (the
// inventory gives only its fleet and labels); else a root is collected;
// else the host is read through its connection's transport, but only when
// no --snapshots was given (auditing snapshots reaches out to no host). A
// connection no transport reads is read too, to report it for that host.
// Any other inventory host is a blind spot (missingHosts).
func collectTargets(opts Options, files *fileList) ([]target, error) {
	var ts []target
	for _, root := range opts.Roots {
		ts = append(ts, target{host: inventory.Host{Root: root}})
	}
	if opts.Inventory == nil {
		return ts, nil
	}
	var described map[string]bool
	if files.Len() > 0 {
		var err error
		if described, err = snapshotHosts(files); err != nil {
			return nil, err
		}
	}
	for _, h := range opts.Inventory.Hosts {
		name, err := transport.For(h)
		switch {
		case described[h.Name]:
		case h.Root != "":
			ts = append(ts, target{host: h})
		case files.Len() > 0:
		case name != "" || err != nil:
			ts = append(ts, target{host: h})
		}
	}
	return ts, nil
}

// collectOptions are what collecting a target needs from the run.
type collectOptions struct {
	version string
	// inventory names where a missing host was expected.
	inventory  string
	transports transport.Set
}

func inputsOf(opts Options) collectOptions {
	c := collectOptions{version: opts.Version, inventory: "inventory", transports: transport.Set{}}
	if opts.Inventory != nil && opts.Inventory.Path != "" {
		c.inventory = opts.Inventory.Path
	}
	maps.Copy(c.transports, opts.Transports)
	if c.transports[transport.Local] == nil {
		c.transports[transport.Local] = local.Transport{NoExec: opts.NoExec, Version: opts.Version}
	}
	return c
}

// collected are the targets as engine inputs: each is collected when the
// engine loads it, inside its worker, and its snapshot becomes the host's
// document there. A target that cannot be collected still gets a document:
// one whose errors say why, so the host is reported (collection-error)
// instead of silently missing; one whose snapshot cannot be made a
// document is an unread host. One host's problem stays that host's.
func collected(targets []target, co collectOptions, log *slog.Logger) iter.Seq[fleetrun.HostInput] {
	return func(yield func(fleetrun.HostInput) bool) {
		for _, t := range targets {
			in := fleetrun.HostInput{Origin: t.origin(co), Name: t.name()}
			in.Load = func(ctx context.Context) (map[string]any, error) {
				snap := collectOne(ctx, t, co)
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				log.Debug("collected", "host", snap.Host, "root", t.host.Root, "errors", len(snap.Errors))
				return snapshot.Document(snap)
			}
			if !yield(in) {
				return
			}
		}
	}
}

// origin names where a target's host comes from: its root or address,
// this machine's tree for a local connection, or the inventory that lists
// it.
func (t target) origin(co collectOptions) string {
	h := t.host
	switch name, _ := transport.For(h); {
	case t.missing:
	case h.Root != "":
		return h.Root
	case h.Address != "":
		return h.Address
	case name == transport.Local:
		return local.Root(h)
	}
	return co.inventory
}

// name is the target's host name before it is collected.
func (t target) name() string {
	if t.host.Name != "" {
		return t.host.Name
	}
	return filepath.Base(t.host.Root)
}

// missingHosts are inventory hosts with neither root nor address that no
// snapshot file described.
func missingHosts(inv *inventory.Inventory, audited iter.Seq[fleetrun.HostRun], targets []target) []target {
	if inv == nil {
		return nil
	}
	collecting := map[string]bool{}
	for _, t := range targets {
		if t.host.Name != "" {
			collecting[t.host.Name] = true
		}
	}
	seen := map[string]bool{}
	for h := range audited {
		seen[h.Host] = true
	}
	var missing []target
	for _, h := range inv.Hosts {
		if !seen[h.Name] && !collecting[h.Name] {
			missing = append(missing, target{host: inventory.Host{Name: h.Name}, missing: true})
		}
	}
	return missing
}

func collectOne(ctx context.Context, t target, co collectOptions) *snapshot.Snapshot {
	if t.missing {
		return transport.Failed(t.host.Name, "", co.version, "inventory", "in the inventory, but no --snapshots file describes it and it has no root (with --snapshots, addresses are not collected)")
	}
	return co.transports.Collect(ctx, t.host, co.version)
}
