package configrepo

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// Schema identifies the gate's JSON document.
const Schema = "fleetaudit.gate/v1"

// Options configure one gate run.
type Options struct {
	// Repo is the config repo's directory (a git work tree).
	Repo string
	// Base is the ref the change starts from; Head the ref it ends at, or
	// WorkTree for the files as they are.
	Base, Head string
	// Fleets are the fleet profiles the repo's fleets are judged by.
	Fleets *fleets.Set
	// Inventory, when set, counts the hosts of each fleet; else the repo's
	// own inventory (fleetaudit.yaml inventory:) at head, if it has one.
	Inventory *inventory.Inventory
	// PolicyDirs are user policy directories.
	PolicyDirs []string
	// AllowRenderCommand lets a render command in fleetaudit.yaml run.
	AllowRenderCommand bool
	// WorkDir holds checkouts and rendered roots; a temporary directory
	// (removed afterwards) when empty.
	WorkDir string
	// BaseCheckout and HeadCheckout, when set, are gated instead of
	// checking out Base and Head: a change held in memory (a proposed
	// fix) is gated without touching the user's repo.
	BaseCheckout, HeadCheckout *Checkout
	// RuleTimeout bounds the evaluation of one rendered fleet's host rules
	// (and of its fleet-wide rules), as audit's: fleetrun.DefaultHostTimeout
	// when 0, no limit when negative. A rule that runs past it leaves its
	// fleet's side not gated in full (a FleetError naming it).
	RuleTimeout time.Duration
	// Plan, when set, applies the change to each recorded host of it too
	// (Result.Plan).
	Plan    *PlanOptions
	Version string
	Log     *slog.Logger
}

// Result is what a change does to each fleet.
type Result struct {
	Schema string  `json:"schema"`
	Base   RefInfo `json:"base"`
	Head   RefInfo `json:"head"`
	// Fleets are every fleet at base or head, sorted by name.
	Fleets []FleetResult `json:"fleets"`
	Errors []FleetError  `json:"errors"`
	// Warnings are what the reader should know that is no error, e.g. a
	// base whose fleetaudit.yaml was invalid and so counted as empty.
	Warnings []string `json:"warnings,omitempty"`
	Summary  Summary  `json:"summary"`
	// Waivers is what a waivers file did to head's findings; nil when none
	// was read.
	Waivers *waivers.Report `json:"waivers,omitempty"`
	// Plan is what the change does to each recorded host; nil unless asked
	// for (Options.Plan).
	Plan *Plan `json:"plan,omitempty"`
}

// Incomplete says what the gate could not judge, nil when it judged
// everything: fleet sides not gated in full, and hosts of the plan that
// could not be evaluated. Hosts left out of the plan for being stale,
// unread or matched by no fleet are not counted: they say nothing about
// the change.
func (r *Result) Incomplete() error {
	var parts []string
	if n := len(r.Errors); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s could not be gated in full", n, plural(n, "fleet side", "fleet sides")))
	}
	if r.Plan != nil {
		n := 0
		for _, np := range r.Plan.NotPlanned {
			if np.Reason == "error" {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s could not be planned", n, plural(n, "host", "hosts")))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%s (see the report)", strings.Join(parts, "; "))
}

// RefInfo names one side of the change.
type RefInfo struct {
	Ref    string `json:"ref"`
	Commit string `json:"commit,omitempty"`
}

// FleetResult is one fleet's side of the change.
type FleetResult struct {
	Fleet   string `json:"fleet"`
	Profile string `json:"profile"`
	// Status is "added", "removed", "changed" (the change reaches the
	// fleet's rendered files), "unchanged", or "error" when a side could
	// not be rendered or audited (see Result.Errors; nothing is compared).
	Status string `json:"status"`
	// Changed are the repo files the change touches that this fleet
	// renders (at head, or at base when removed).
	Changed []string `json:"changed"`
	// Hosts is the number of inventory hosts in the fleet; absent without
	// an inventory.
	Hosts *int `json:"hosts,omitempty"`
	// Introduced findings hold at head and not at base, Resolved at base
	// and not at head; Unchanged at both (reported with head's provenance).
	Introduced []policies.Finding `json:"introduced"`
	Resolved   []policies.Finding `json:"resolved"`
	Unchanged  []policies.Finding `json:"unchanged"`
}

// FleetError is a fleet that could not be rendered or audited at one side.
type FleetError struct {
	Fleet string `json:"fleet,omitempty"`
	Ref   string `json:"ref"`
	Error string `json:"error"`
	// TimedOut are the rules that did not finish within the rule budget
	// at this side: their findings are unknown, so the change cannot be
	// shown to leave them as they were.
	TimedOut []string `json:"timed_out,omitempty"`
}

// Summary counts the change's effect.
type Summary struct {
	Introduced           int            `json:"introduced"`
	Resolved             int            `json:"resolved"`
	Unchanged            int            `json:"unchanged"`
	IntroducedBySeverity map[string]int `json:"introduced_by_severity"`
	// FleetsAffected are fleets the change reaches or that gain findings.
	FleetsAffected []string `json:"fleets_affected"`
	// HostsAffected sums the hosts of the affected fleets; absent without
	// an inventory.
	HostsAffected *int `json:"hosts_affected,omitempty"`
}

// MaxIntroducedRank is the highest severity rank among unwaived introduced
// findings (0 when none).
func (r *Result) MaxIntroducedRank() int {
	top := 0
	for _, f := range r.Fleets {
		for _, x := range f.Introduced {
			if x.Waived != nil {
				continue
			}
			top = max(top, policies.SeverityRank(x.Severity))
		}
	}
	if r.Plan != nil {
		top = max(top, r.Plan.MaxRank())
	}
	return top
}

// side is one ref, rendered and audited.
type side struct {
	co       *Checkout
	manifest *Manifest // nil: the ref has no fleetaudit.yaml
	fleets   map[string]*fleetRun
}

type fleetRun struct {
	rendered *Rendered
	// audited is true once findings were computed (possibly with refused
	// files left out); false when rendering or evaluation failed.
	audited  bool
	findings []policies.Finding
	// pods names each "pods.<i>" fact by the pod's kind, namespace and
	// name, which survive manifests being added or reordered.
	pods map[string]string
	// timedOut are the rules that did not finish within the budget.
	timedOut []string
	err      error
}

// Run gates the change from opts.Base to opts.Head.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Base == "" && opts.BaseCheckout == nil {
		return nil, errors.New("gate: no base ref")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	work := opts.WorkDir
	if work == "" {
		dir, err := os.MkdirTemp("", "fleetaudit-gate-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	engine, err := fleets.NewEngine(ctx, opts.Fleets, opts.PolicyDirs)
	if err != nil {
		return nil, err
	}
	g := &gater{opts: opts, engine: engine, log: log}
	head, err := g.side(ctx, opts.Head, opts.HeadCheckout, filepath.Join(work, "head"))
	if err != nil {
		return nil, err
	}
	if head.manifest == nil {
		return nil, fmt.Errorf("%s at %s: no %s: not a fleetaudit config repo", opts.Repo, head.co.Label(), ManifestFile)
	}
	var base *side
	if opts.BaseCheckout != nil && opts.BaseCheckout == opts.HeadCheckout {
		// One checkout on both sides (remediate's base gated against
		// itself): its fleets are rendered and evaluated once.
		base = head
	} else {
		base, err = g.side(ctx, opts.Base, opts.BaseCheckout, filepath.Join(work, "base"))
	}
	var badManifest *manifestError
	warning := ""
	if errors.As(err, &badManifest) {
		// A change that repairs fleetaudit.yaml is gated against nothing.
		warning = fmt.Sprintf("base has no valid %s, so every finding at head counts as introduced: %v", ManifestFile, err)
		log.Warn(warning)
		base, err = &side{co: badManifest.co, fleets: map[string]*fleetRun{}}, nil
	}
	if err != nil {
		return nil, err
	}
	inv := opts.Inventory
	if inv == nil && head.manifest.Inventory != "" {
		f, ok := head.co.Files[head.manifest.Inventory]
		if !ok {
			return nil, fmt.Errorf("%s: inventory %s: no such file in the repo", ManifestFile, head.manifest.Inventory)
		}
		if inv, err = inventory.Parse(head.manifest.Inventory, f.Data); err != nil {
			return nil, fmt.Errorf("%s inventory: %w", ManifestFile, err)
		}
	}
	res := g.compare(base, head, inv)
	if warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	if opts.Plan != nil {
		if res.Plan, err = g.plan(ctx, base, head, res, opts.Plan); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// manifestError is a checkout whose fleetaudit.yaml is invalid.
type manifestError struct {
	co  *Checkout
	err error
}

func (e *manifestError) Error() string { return e.err.Error() }
func (e *manifestError) Unwrap() error { return e.err }

type gater struct {
	opts   Options
	engine *policies.Engine
	log    *slog.Logger
}

// side checks out ref (unless co is given), renders and audits every fleet
// of its manifest.
func (g *gater) side(ctx context.Context, ref string, co *Checkout, dir string) (*side, error) {
	var err error
	switch {
	case co != nil:
	case ref == WorkTree:
		co, err = CheckoutWorkTree(ctx, g.opts.Repo)
	default:
		co, err = CheckoutRef(ctx, g.opts.Repo, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.opts.Repo, err)
	}
	s := &side{co: co, fleets: map[string]*fleetRun{}}
	mf, ok := co.Files[ManifestFile]
	if !ok {
		return s, nil // a repo that becomes a config repo with this change
	}
	if s.manifest, err = ParseManifest(mf.Data); err != nil {
		return nil, &manifestError{co: co, err: fmt.Errorf("%s at %s: %w", g.opts.Repo, co.Label(), err)}
	}
	names := s.manifest.FleetNames()
	runs := make([]*fleetRun, len(names))
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range names {
		eg.Go(func() error {
			runs[i] = g.fleet(ectx, s, name, filepath.Join(dir, "fleets", name))
			return ectx.Err()
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	for i, name := range names {
		s.fleets[name] = runs[i]
		g.log.Debug("gated fleet", "ref", co.Label(), "fleet", name, "findings", len(runs[i].findings), "error", runs[i].err)
	}
	return s, nil
}

func (g *gater) fleet(ctx context.Context, s *side, name, dir string) *fleetRun {
	run := &fleetRun{}
	r, err := Render(ctx, s.co, s.manifest, name, RenderOptions{AllowCommand: g.opts.AllowRenderCommand, WorkDir: dir})
	if err != nil {
		run.err = err
		return run
	}
	run.rendered = r
	doc, err := hostDoc(ctx, s.co, s.manifest, r, g.opts.Version)
	if err != nil {
		run.err = fmt.Errorf("fleet %s: %w", name, err)
		return run
	}
	profile := s.manifest.ProfileOf(name)
	if profile == "" || !slices.Contains(g.engine.Fleets(), profile) {
		known := slices.DeleteFunc(slices.Clone(g.engine.Fleets()), func(f string) bool { return f == "" })
		run.err = fmt.Errorf("fleet %s: no fleet profile %q (known: %s); name one with profile: in %s or add it with --fleets", name, profile, strings.Join(known, ", "), ManifestFile)
		return run
	}
	if err := g.evaluate(ctx, run, doc, name, profile); err != nil {
		run.err = fmt.Errorf("fleet %s: %w", name, err)
		return run
	}
	var why []string
	if len(run.timedOut) > 0 {
		why = append(why, fmt.Sprintf("%s %s did not finish within %s (--rule-timeout): %s findings are unknown, so the change is not gated in full",
			plural(len(run.timedOut), "rule", "rules"), strings.Join(run.timedOut, ", "), g.budget(), plural(len(run.timedOut), "its", "their")))
	}
	if len(r.Refused) > 0 {
		why = append(why, "refused "+listSome(r.Refused, maxListed))
	}
	if len(why) > 0 {
		run.err = fmt.Errorf("fleet %s: %s", name, strings.Join(why, "; "))
	}
	run.pods = policies.PodIDs(doc)
	return run
}

// evaluate audits the rendered fleet as audit audits a host, through the
// same runner with the same rule budget: its document is one host, and its
// fleet-wide pass sees it as the fleet's one host (job rules compare the
// pod templates of a job's roles, skew rules compare the host with the
// profile's declared baseline). Rules that time out are run.timedOut, with
// the collection-error findings audit reports for them, and a fleet-wide
// rule that times out is one of them too; a rule that fails leaves the
// fleet not audited (the error), as it did.
func (g *gater) evaluate(ctx context.Context, run *fleetRun, doc map[string]any, name, profile string) error {
	host := fleetrun.HostInput{
		Origin: name,
		Name:   name,
		Load:   func(context.Context) (map[string]any, error) { return doc, nil },
	}
	a, err := fleetrun.RunAudit(ctx, g.engine, func(yield func(fleetrun.HostInput) bool) { yield(host) }, fleetrun.RunOptions{
		FleetOf:     func(string, map[string]any) string { return profile },
		HostTimeout: g.opts.RuleTimeout,
		// The gate evaluates its fleets side by side already.
		Workers: 1,
		Hosts:   1,
	})
	if err != nil {
		return err
	}
	run.timedOut = slices.Clone(a.Host(0).TimedOut)
	var errs []error
	for _, f := range a.Failures {
		if te, ok := f.Err.(*fleetrun.TimeoutError); ok {
			run.timedOut = append(run.timedOut, te.Rules...)
			continue
		}
		errs = append(errs, f.Err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	findings := a.Findings()
	for i := range findings {
		findings[i].Fleet = name
	}
	run.findings, run.audited = findings, true
	return nil
}

// budget is the rule budget in effect, as a message names it.
func (g *gater) budget() time.Duration {
	if g.opts.RuleTimeout == 0 {
		return fleetrun.DefaultHostTimeout
	}
	return g.opts.RuleTimeout
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// compare matches findings of base and head per fleet.
func (g *gater) compare(base, head *side, inv *inventory.Inventory) *Result {
	res := &Result{
		Schema:  Schema,
		Base:    RefInfo{Ref: base.co.Label(), Commit: base.co.Commit},
		Head:    RefInfo{Ref: head.co.Label(), Commit: head.co.Commit},
		Errors:  []FleetError{},
		Summary: Summary{IntroducedBySeverity: map[string]int{}, FleetsAffected: []string{}},
	}
	names := map[string]bool{}
	for n := range base.fleets {
		names[n] = true
	}
	for n := range head.fleets {
		names[n] = true
	}
	hosts := hostCounts(g.opts.Fleets, inv, head.manifest)
	affectedHosts := 0
	for _, name := range sortedSet(names) {
		b, h := base.fleets[name], head.fleets[name]
		fr := FleetResult{Fleet: name, Introduced: []policies.Finding{}, Resolved: []policies.Finding{}, Unchanged: []policies.Finding{}, Changed: []string{}}
		switch {
		case b == nil:
			fr.Status = "added"
		case h == nil:
			fr.Status = "removed"
		}
		if head.manifest != nil && h != nil {
			fr.Profile = head.manifest.ProfileOf(name)
		} else if base.manifest != nil {
			fr.Profile = base.manifest.ProfileOf(name)
		}
		for _, x := range []struct {
			run *fleetRun
			s   *side
		}{{b, base}, {h, head}} {
			if x.run != nil && x.run.err != nil {
				res.Errors = append(res.Errors, FleetError{Fleet: name, Ref: x.s.co.Label(), Error: x.run.err.Error(), TimedOut: x.run.timedOut})
			}
		}
		fr.Changed = changedFiles(b, h)
		if fr.Status == "" {
			fr.Status = "unchanged"
			if len(fr.Changed) > 0 {
				fr.Status = "changed"
			}
		}
		if b != nil && !b.audited || h != nil && !h.audited {
			// One side has no findings to compare: reporting the other
			// side's as introduced or resolved would be a guess.
			fr.Status = "error"
		} else {
			fr.Introduced, fr.Resolved, fr.Unchanged = diffFindings(b, h)
		}
		if n, ok := hosts[name]; ok {
			fr.Hosts = &n
		}
		res.Summary.Introduced += len(fr.Introduced)
		res.Summary.Resolved += len(fr.Resolved)
		res.Summary.Unchanged += len(fr.Unchanged)
		for _, f := range fr.Introduced {
			res.Summary.IntroducedBySeverity[f.Severity]++
		}
		if fr.Status != "unchanged" || len(fr.Introduced) > 0 || len(fr.Resolved) > 0 {
			res.Summary.FleetsAffected = append(res.Summary.FleetsAffected, name)
			if fr.Hosts != nil {
				affectedHosts += *fr.Hosts
			}
		}
		res.Fleets = append(res.Fleets, fr)
	}
	if hosts != nil {
		res.Summary.HostsAffected = &affectedHosts
	}
	return res
}

// changedFiles lists the repo files whose change reaches a fleet's render:
// rendered paths whose content differs, named by the repo file at head (at
// base when the path went away).
func changedFiles(b, h *fleetRun) []string {
	var bd, hd map[string][sha256.Size]byte
	var bo, ho map[string]string
	if b != nil && b.rendered != nil {
		bd, bo = b.rendered.Digests, b.rendered.Origins
	}
	if h != nil && h.rendered != nil {
		hd, ho = h.rendered.Digests, h.rendered.Origins
	}
	name := func(origins map[string]string, p string) string {
		if o, ok := origins[p]; ok {
			return o
		}
		return p
	}
	out := map[string]bool{}
	for p, sum := range hd {
		if bs, ok := bd[p]; !ok || bs != sum {
			out[name(ho, p)] = true
		}
	}
	for p := range bd {
		if _, ok := hd[p]; !ok {
			out[name(bo, p)] = true
		}
	}
	return sortedSet(out)
}

// diffFindings matches findings by (rule, facts cited): the message text
// and the file that set a value may change while the finding stays the
// same. Equal keys match one to one.
func diffFindings(base, head *fleetRun) (introduced, resolved, unchanged []policies.Finding) {
	introduced, resolved, unchanged = []policies.Finding{}, []policies.Finding{}, []policies.Finding{}
	left := map[string][]policies.Finding{}
	if base != nil {
		for _, f := range base.findings {
			k := policies.FindingKey(f, base.pods)
			left[k] = append(left[k], f)
		}
	}
	if head != nil {
		for i := range head.findings {
			f := head.findings[i]
			k := policies.FindingKey(f, head.pods)
			if len(left[k]) > 0 {
				left[k] = left[k][1:]
				unchanged = append(unchanged, f)
				continue
			}
			introduced = append(introduced, f)
		}
	}
	for _, fs := range left {
		resolved = append(resolved, fs...)
	}
	for _, list := range [][]policies.Finding{introduced, resolved, unchanged} {
		slices.SortStableFunc(list, func(a, b policies.Finding) int {
			return cmp.Or(
				-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
				cmp.Compare(a.Rule, b.Rule),
				cmp.Compare(a.Message, b.Message),
			)
		})
	}
	return introduced, resolved, unchanged
}

// hostCounts counts inventory hosts per repo fleet: a repo fleet that
// declares labels has the hosts carrying all of them; any other has the
// hosts whose fleet (named by the inventory or matched by the profiles) is
// its name or profile. nil without an inventory.
func hostCounts(set *fleets.Set, inv *inventory.Inventory, m *Manifest) map[string]int {
	if inv == nil || m == nil {
		return nil
	}
	out := map[string]int{}
	for _, name := range m.FleetNames() {
		out[name] = 0
	}
	for _, h := range inv.Hosts {
		fleet := h.Fleet
		if set != nil {
			if f, err := set.FleetOf(fleets.FactsOf(h.Name, &h, nil)); err == nil {
				fleet = f
			}
		}
		for _, name := range m.FleetNames() {
			if labels := m.Fleets[name].Labels; len(labels) > 0 {
				if hasLabels(h.Labels, labels) {
					out[name]++
				}
			} else if fleet != "" && (fleet == name || fleet == m.ProfileOf(name)) {
				out[name]++
			}
		}
	}
	return out
}

func hasLabels(host, want map[string]string) bool {
	for k, v := range want {
		if host[k] != v {
			return false
		}
	}
	return true
}

// maxListed bounds the refused files an error names: a hostile repo may
// hold thousands of symlinks.
const maxListed = 10

// listSome joins the first n items and counts the rest.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
