package remediate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
)

// Schema identifies the remediate JSON document.
const Schema = "fleetaudit.remediate/v1"

// Options configure Plan.
type Options struct {
	// Repo is the config repo (a git work tree) and Base the ref fixes
	// apply to ("HEAD" when empty). The work tree is never written.
	Repo, Base string
	// Rule and Fleet, when set, keep only that rule or repo fleet.
	Rule, Fleet string
	// Audit, when set, are findings seen on live hosts (an audit's JSON
	// report): each is mapped to its repo fleet and grouped by (rule,
	// fleet). Without it the repo's own findings at Base are fixed.
	Audit []policies.Finding
	// Fleets are the fleet profiles; PolicyDirs user policy directories.
	Fleets     *fleets.Set
	PolicyDirs []string
	// RuleTimeout is the gate's rule budget (configrepo.Options.RuleTimeout):
	// a fix whose proof has a rule that runs past it is refused.
	RuleTimeout time.Duration
	Version     string
	Log         *slog.Logger

	// Set by MakePlan: the config repo's directory in its git repository
	// and the branch Base names (see Proposal.Base).
	prefix, branch string
}

// Plan is every (rule, fleet) group: proven into a Proposal, or refused
// with the reason; and the findings that formed no group.
type Plan struct {
	Schema     string    `json:"schema"`
	Base       string    `json:"base"`
	BaseCommit string    `json:"base_commit"`
	Groups     []*Group  `json:"groups"`
	Skipped    []Skipped `json:"skipped"`
	// Warnings are fleets that could not be audited in full at base: their
	// findings there are incomplete.
	Warnings []string `json:"warnings,omitempty"`
}

// Group is one (rule, fleet): the findings, the fix, where it goes, the
// gate's proof, and the Proposal (nil when Refused says why not).
type Group struct {
	Rule  string `json:"rule"`
	Fleet string `json:"fleet"`
	// Findings are the rule's findings in the fleet: the rendered repo's
	// at base, or the hosts' from the audit.
	Findings []policies.Finding `json:"findings"`
	Hosts    []string           `json:"hosts,omitempty"`
	Fix      *Fix               `json:"fix,omitempty"`
	// Placement is where the fix goes; nil when it could not be placed.
	Placement *Placement `json:"placement,omitempty"`
	// Proof is the gate's verdict on base -> base + fix, in lines.
	Proof    []string  `json:"proof,omitempty"`
	Proposal *Proposal `json:"proposal,omitempty"`
	Refused  string    `json:"refused,omitempty"`
}

// Skipped is a finding that formed no group, with why.
type Skipped struct {
	Rule   string   `json:"rule"`
	Fleet  string   `json:"fleet"`
	Hosts  []string `json:"hosts,omitempty"`
	Reason string   `json:"reason"`
}

// Proposals are the proven groups' proposals.
func (p *Plan) Proposals() []Proposal {
	var out []Proposal
	for _, g := range p.Groups {
		if g.Proposal != nil {
			out = append(out, *g.Proposal)
		}
	}
	return out
}

// Refused counts the groups refused.
func (p *Plan) Refused() int {
	n := 0
	for _, g := range p.Groups {
		if g.Proposal == nil {
			n++
		}
	}
	return n
}

// refPart is what a rule id or fleet name may hold to be one component of
// a branch name (git check-ref-format, and nothing a shell or URL quotes).
var refPart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// BranchName is the deterministic branch of a (rule, fleet) group.
func BranchName(rule, fleet string) string { return "fleetaudit/fix/" + rule + "/" + fleet }

// MakePlan finds the groups to fix and places, proves and diffs each. A
// group that cannot be placed or proven is refused, never proposed.
func MakePlan(ctx context.Context, opts Options) (*Plan, error) {
	if opts.Base == "" {
		opts.Base = "HEAD"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	base, err := configrepo.CheckoutRef(ctx, opts.Repo, opts.Base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Repo, err)
	}
	if opts.prefix, err = repoPrefix(ctx, opts.Repo); err != nil {
		return nil, err
	}
	opts.branch = baseBranch(ctx, opts.Repo, opts.Base)
	mf, ok := base.Files[configrepo.ManifestFile]
	if !ok {
		return nil, fmt.Errorf("%s at %s: no %s: not a fleetaudit config repo", opts.Repo, opts.Base, configrepo.ManifestFile)
	}
	m, err := configrepo.ParseManifest(mf.Data)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", opts.Repo, opts.Base, err)
	}
	if m.Render != nil {
		return nil, fmt.Errorf("%s at %s: the fleets are written by a render command (render: in %s): fleetaudit does not know which files the command owns, so it places no fix in this repo", opts.Repo, opts.Base, configrepo.ManifestFile)
	}
	if opts.Fleet != "" && m.Fleets[opts.Fleet] == nil {
		return nil, fmt.Errorf("--fleet %s: not a fleet of %s (fleets: %s)", opts.Fleet, configrepo.ManifestFile, strings.Join(m.FleetNames(), ", "))
	}
	// The repo's own findings at base: the base gated against itself
	// leaves every finding unchanged.
	now, err := configrepo.Run(ctx, opts.gate(base, base))
	if err != nil {
		return nil, err
	}
	repoFindings := map[string][]policies.Finding{}
	for _, fr := range now.Fleets {
		repoFindings[fr.Fleet] = fr.Unchanged
	}
	plan := &Plan{Schema: Schema, Base: opts.Base, BaseCommit: base.Commit, Groups: []*Group{}, Skipped: []Skipped{}}
	for _, e := range now.Errors {
		// Base is both sides of that gate: each error comes twice.
		if w := fmt.Sprintf("fleet %s could not be audited in full at %s: %s", e.Fleet, opts.Base, e.Error); !slices.Contains(plan.Warnings, w) {
			plan.Warnings = append(plan.Warnings, w)
		}
	}
	var groups map[[2]string]*Group
	if opts.Audit != nil {
		groups, plan.Skipped = groupAudit(opts.Audit, m)
	} else {
		groups = map[[2]string]*Group{}
		for fleet, fs := range repoFindings {
			for _, f := range fs {
				k := [2]string{f.Rule, fleet}
				if groups[k] == nil {
					groups[k] = &Group{Rule: f.Rule, Fleet: fleet}
				}
				groups[k].Findings = append(groups[k].Findings, f)
			}
		}
	}
	affected := map[string][]string{} // rule -> fleets it holds in
	for k := range groups {
		affected[k[0]] = append(affected[k[0]], k[1])
	}
	keys := slices.SortedFunc(func(yield func([2]string) bool) {
		for k := range groups {
			if !yield(k) {
				return
			}
		}
	}, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		g := groups[k]
		if opts.Rule != "" && g.Rule != opts.Rule || opts.Fleet != "" && g.Fleet != opts.Fleet {
			continue
		}
		fix, err := groupFix(g.Findings)
		if err != nil {
			reason := err.Error()
			if errors.Is(err, ErrNoFix) {
				reason = "no fix: the rule attaches no config change (its remediation is for people)"
			}
			plan.Skipped = append(plan.Skipped, Skipped{Rule: g.Rule, Fleet: g.Fleet, Hosts: g.Hosts, Reason: reason})
			continue
		}
		g.Fix = &fix
		plan.Groups = append(plan.Groups, g)
		if err := opts.propose(ctx, base, m, g, affected[g.Rule], repoFindings[g.Fleet]); err != nil {
			var r *Refusal
			if !errors.As(err, &r) {
				return nil, fmt.Errorf("%s in fleet %s: %w", g.Rule, g.Fleet, err)
			}
			g.Refused = r.Reason
			opts.Log.Info("refused", "rule", g.Rule, "fleet", g.Fleet, "reason", r.Reason)
		}
	}
	plan.Skipped = slices.DeleteFunc(plan.Skipped, func(s Skipped) bool {
		return opts.Rule != "" && s.Rule != opts.Rule || opts.Fleet != "" && s.Fleet != opts.Fleet
	})
	slices.SortFunc(plan.Skipped, func(a, b Skipped) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Fleet, b.Fleet), cmp.Compare(a.Reason, b.Reason))
	})
	return plan, nil
}

func (opts Options) gate(base, head *configrepo.Checkout) configrepo.Options {
	return configrepo.Options{
		Repo:         opts.Repo,
		Base:         opts.Base,
		BaseCheckout: base,
		HeadCheckout: head,
		Fleets:       opts.Fleets,
		PolicyDirs:   opts.PolicyDirs,
		RuleTimeout:  opts.RuleTimeout,
		Version:      opts.Version,
		Log:          opts.Log,
	}
}

// groupFix is the one fix of a group's findings.
func groupFix(findings []policies.Finding) (Fix, error) {
	var out Fix
	withFix := 0
	for _, f := range findings {
		if len(f.Fix) > 0 {
			withFix++
		}
	}
	if withFix > 0 && withFix < len(findings) {
		return Fix{}, fmt.Errorf("%d of %d findings carry no fix (no config change resolves them, e.g. a value that differs only until the next reboot), so no one change resolves the group", len(findings)-withFix, len(findings))
	}
	for i, f := range findings {
		fix, err := ParseFix(f.Fix)
		if err != nil {
			return Fix{}, err
		}
		if i == 0 {
			out = fix
			continue
		}
		if out, err = out.merge(fix); err != nil {
			return Fix{}, err
		}
	}
	return out, nil
}

// groupAudit groups an audit's findings by (rule, repo fleet). A finding's
// fleet is the fleet profile its host was judged by: the repo fleet of that
// name, else the one repo fleet judged by that profile.
func groupAudit(findings []policies.Finding, m *configrepo.Manifest) (map[[2]string]*Group, []Skipped) {
	groups := map[[2]string]*Group{}
	skipped := map[[3]string]*Skipped{}
	skip := func(f policies.Finding, fleet, reason string) {
		k := [3]string{f.Rule, fleet, reason}
		if skipped[k] == nil {
			skipped[k] = &Skipped{Rule: f.Rule, Fleet: fleet, Reason: reason}
		}
		if f.Host != "" && !slices.Contains(skipped[k].Hosts, f.Host) {
			skipped[k].Hosts = append(skipped[k].Hosts, f.Host)
		}
	}
	for _, f := range findings {
		fleet, reason := repoFleet(f.Fleet, m)
		if reason != "" {
			skip(f, f.Fleet, reason)
			continue
		}
		if len(f.Fix) == 0 {
			skip(f, fleet, "no fix: the rule attaches no config change (its remediation is for people)")
			continue
		}
		k := [2]string{f.Rule, fleet}
		if groups[k] == nil {
			groups[k] = &Group{Rule: f.Rule, Fleet: fleet}
		}
		g := groups[k]
		g.Findings = append(g.Findings, f)
		if f.Host != "" && !slices.Contains(g.Hosts, f.Host) {
			g.Hosts = append(g.Hosts, f.Host)
		}
	}
	var out []Skipped
	for _, s := range skipped {
		slices.Sort(s.Hosts)
		out = append(out, *s)
	}
	for _, g := range groups {
		slices.Sort(g.Hosts)
	}
	return groups, out
}

func repoFleet(fleet string, m *configrepo.Manifest) (string, string) {
	if fleet == "" {
		return "", "the finding names no fleet"
	}
	if m.Fleets[fleet] != nil {
		return fleet, ""
	}
	var byProfile []string
	for _, name := range m.FleetNames() {
		if m.ProfileOf(name) == fleet {
			byProfile = append(byProfile, name)
		}
	}
	switch len(byProfile) {
	case 0:
		return "", fmt.Sprintf("fleet %s is not in the repo's %s (fleets: %s)", fleet, configrepo.ManifestFile, strings.Join(m.FleetNames(), ", "))
	case 1:
		return byProfile[0], ""
	}
	return "", fmt.Sprintf("fleet %s matches several repo fleets by profile (%s): the finding does not say which", fleet, strings.Join(byProfile, ", "))
}

// propose places g's fix, gates it and fills g.Proposal; a *Refusal says
// why not.
func (opts Options) propose(ctx context.Context, base *configrepo.Checkout, m *configrepo.Manifest, g *Group, affected []string, atBase []policies.Finding) error {
	if !slices.ContainsFunc(atBase, func(f policies.Finding) bool { return f.Rule == g.Rule }) {
		return refuse("the repo at %s does not show %s for fleet %s, so no change to it can be proven to fix the hosts: they differ from the repo (drift, a change not applied yet) or the rule needs facts only a live host has", opts.Base, g.Rule, g.Fleet)
	}
	if !refPart.MatchString(g.Rule) || !refPart.MatchString(g.Fleet) || strings.Contains(g.Rule+g.Fleet, "..") || strings.HasSuffix(g.Fleet, ".lock") {
		return refuse("the branch %s would not be a valid git branch name: rename the fleet to letters, digits, '.', '_' and '-'", BranchName(g.Rule, g.Fleet))
	}
	if g.Fix.Kind == KindPod {
		// The pods to edit are the repo's: the ones the gate must see
		// resolved (an audit's pods cite the cluster, not the repo).
		fix, err := locatePods(atBase, g.Rule)
		if err != nil {
			return err
		}
		g.Fix = &fix
	}
	p, err := Place(base, m, g.Fleet, affected, *g.Fix)
	if err != nil {
		return err
	}
	g.Placement = p
	fixed, err := base.WithFiles("base + fix", p.Files)
	if err != nil {
		return refuse("%v", err)
	}
	res, err := configrepo.Run(ctx, opts.gate(base, fixed))
	if err != nil {
		return err
	}
	g.Proof = judge(res, g)
	var proof []string
	for _, line := range g.Proof {
		if strings.HasPrefix(line, "FAIL ") {
			proof = append(proof, strings.TrimPrefix(line, "FAIL "))
		}
	}
	if len(proof) > 0 {
		return refuse("the gate does not prove the fix: %s", strings.Join(proof, "; "))
	}
	// The diff and the files name paths from the git repository's top, so
	// git apply and a pull request put them where the config repo is.
	old, files := map[string][]byte{}, map[string][]byte{}
	for name, data := range p.Files {
		files[opts.prefix+name] = data
		if f, ok := base.Files[name]; ok {
			old[opts.prefix+name] = f.Data
		}
	}
	diff, err := unifiedDiff(ctx, old, files)
	if err != nil {
		return err
	}
	prop := &Proposal{
		Rule:        g.Rule,
		Fleet:       g.Fleet,
		Branch:      BranchName(g.Rule, g.Fleet),
		Base:        opts.branch,
		BaseCommit:  base.Commit,
		Title:       title(g, p),
		Diff:        diff,
		Fingerprint: fingerprint(p.Files),
		Hosts:       g.Hosts,
	}
	for _, name := range p.Paths() {
		mode := "100644"
		if f, ok := base.Files[name]; ok && f.Mode&0o111 != 0 {
			mode = "100755" // kept as the repo has it
		}
		prop.Files = append(prop.Files, FileChange{Path: opts.prefix + name, Content: p.Files[name], Mode: mode})
	}
	prop.Body = body(g, res, prop)
	g.Proposal = prop
	return nil
}

func title(g *Group, p *Placement) string {
	if g.Fix.Kind == KindPod {
		return fmt.Sprintf("fleetaudit: fix %s in fleet %s (%s)", g.Rule, g.Fleet, strings.Join(p.Paths(), ", "))
	}
	return fmt.Sprintf("fleetaudit: fix %s in fleet %s (layer %s)", g.Rule, g.Fleet, p.Layer)
}

// judge reads the gate's result for g: every finding of g's rule in its
// fleet resolved, nothing introduced anywhere, no fleet that fails to
// render with the fix. Lines starting "FAIL " are why the proof fails.
func judge(res *configrepo.Result, g *Group) []string {
	var lines []string
	baseErrs := map[string]bool{}
	for _, e := range res.Errors {
		if e.Ref == res.Base.Ref {
			baseErrs[e.Fleet+"\x00"+e.Error] = true
		}
	}
	for _, e := range res.Errors {
		// A rule that timed out with the fix may have a finding there,
		// however it fared at base: nothing proves it introduces none.
		if e.Ref != res.Base.Ref && (!baseErrs[e.Fleet+"\x00"+e.Error] || len(e.TimedOut) > 0) {
			lines = append(lines, fmt.Sprintf("FAIL fleet %s cannot be audited with the fix: %s", e.Fleet, e.Error))
		}
	}
	seen := false
	for _, fr := range res.Fleets {
		if fr.Fleet == g.Fleet {
			seen = true
			var resolved, stays []string
			for _, f := range fr.Resolved {
				if f.Rule == g.Rule {
					resolved = append(resolved, f.Message)
				}
			}
			for _, f := range slices.Concat(fr.Unchanged, fr.Introduced) {
				if f.Rule == g.Rule {
					stays = append(stays, f.Message)
				}
			}
			for _, r := range resolved {
				lines = append(lines, fmt.Sprintf("resolved in %s: %s: %s", fr.Fleet, g.Rule, r))
			}
			if len(resolved) == 0 && len(stays) == 0 {
				lines = append(lines, fmt.Sprintf("FAIL %s was not found in fleet %s at base, so the fix resolves nothing", g.Rule, fr.Fleet))
			}
			for _, f := range slices.Concat(fr.Unchanged, fr.Introduced) {
				if f.Rule != g.Rule {
					continue
				}
				why := "the fix is placed where it does not win, or the rule reads something the drop-in does not change"
				switch baseline := fromBaseline(f); {
				case baseline == len(f.Evidence):
					why = "its facts come from the fleet's baseline snapshot, not from the repo's files, so no change to the repo resolves it"
				case baseline > 0:
					why += "; part of its facts come from the fleet's baseline snapshot, which no change to the repo alters"
				}
				lines = append(lines, fmt.Sprintf("FAIL %s stays in fleet %s: %s (%s): %s", g.Rule, fr.Fleet, f.Message, sources(f), why))
			}
		}
		for _, f := range fr.Introduced {
			if fr.Fleet == g.Fleet && f.Rule == g.Rule {
				continue // counted as staying
			}
			lines = append(lines, fmt.Sprintf("FAIL introduces %s (%s) in fleet %s: %s", f.Rule, f.Severity, fr.Fleet, f.Message))
		}
		if fr.Fleet != g.Fleet {
			if fr.Status == "unchanged" {
				lines = append(lines, fmt.Sprintf("fleet %s: unchanged (the fix reaches none of its files)", fr.Fleet))
			} else if len(fr.Introduced) == 0 {
				lines = append(lines, fmt.Sprintf("fleet %s: %s (%s), introduces nothing", fr.Fleet, fr.Status, strings.Join(fr.Changed, ", ")))
			}
		}
	}
	if !seen {
		lines = append(lines, fmt.Sprintf("FAIL fleet %s is not in the gate's result", g.Fleet))
	}
	if res.Summary.Introduced == 0 {
		lines = append(lines, "introduced in any fleet: nothing")
	}
	return lines
}

// fromBaseline counts the facts a finding cites that were read from the
// fleet's baseline snapshot; a fact without a source counts as one when
// every fact with a source is from the baseline.
func fromBaseline(f policies.Finding) int {
	n, sourced := 0, 0
	for _, e := range f.Evidence {
		if e.Source == "" {
			continue
		}
		sourced++
		if strings.Contains(e.Source, "(baseline ") {
			n++
		}
	}
	if n > 0 && n == sourced {
		return len(f.Evidence)
	}
	return n
}

func sources(f policies.Finding) string {
	var out []string
	for _, e := range f.Evidence {
		if e.Source != "" && !slices.Contains(out, e.Source) {
			out = append(out, e.Source)
		}
	}
	if len(out) == 0 {
		return "no source"
	}
	return "set at " + strings.Join(out, ", ")
}

// body is the pull request's Markdown: finding, evidence and provenance,
// blast radius, the gate's proof, rollback.
func body(g *Group, res *configrepo.Result, prop *Proposal) string {
	var b strings.Builder
	f := g.Findings[0]
	fmt.Fprintf(&b, "## %s in fleet %s\n\n", g.Rule, g.Fleet)
	fmt.Fprintf(&b, "**Finding** (%s): %s\n\n", f.Severity, mdEscape(f.Message))
	if len(f.Evidence) > 0 {
		b.WriteString("**Evidence**\n\n")
		for _, e := range f.Evidence {
			v, _ := json.Marshal(e.Value)
			if len(v) > 120 {
				v = append(v[:117], "..."...)
			}
			src := ""
			if e.Source != "" {
				src = " — set at `" + strings.ReplaceAll(mdEscape(e.Source), "`", "'") + "`"
			}
			fmt.Fprintf(&b, "- `%s` = `%s`%s\n", e.Fact, strings.ReplaceAll(string(v), "`", "'"), src)
		}
		b.WriteString("\n")
	}
	if len(g.Hosts) > 0 {
		fmt.Fprintf(&b, "**Affected hosts** (%d, from the audit): %s\n\n", len(g.Hosts), strings.Join(g.Hosts, ", "))
	}
	fmt.Fprintf(&b, "**Fix**: %s\n\n", mdEscape(g.Fix.String()))
	fmt.Fprintf(&b, "**Placement**: %s.\n\nFiles:\n", mdEscape(g.Placement.Why))
	for _, fc := range prop.Files {
		fmt.Fprintf(&b, "- `%s`\n", mdEscape(fc.Path))
	}
	b.WriteString("\n**Blast radius**: ")
	if len(res.Summary.FleetsAffected) == 0 {
		b.WriteString("no fleet's rendered files change.\n\n")
	} else {
		b.WriteString("fleets whose rendered files change: " + strings.Join(res.Summary.FleetsAffected, ", "))
		if res.Summary.HostsAffected != nil {
			fmt.Fprintf(&b, " (%d hosts in the inventory)", *res.Summary.HostsAffected)
		}
		b.WriteString(".\n\n")
	}
	fmt.Fprintf(&b, "**Gate proof** (`%s` at %s → with this change):\n\n", res.Base.Ref, short(res.Base.Commit))
	for _, l := range g.Proof {
		fmt.Fprintf(&b, "- %s\n", mdEscape(l))
	}
	b.WriteString("\n**Rollback**: revert this pull request's commit; it touches only the files above. ")
	switch g.Fix.Kind {
	case KindBootParam:
		b.WriteString("Boot parameters take effect at the next grub-mkconfig and reboot, so does the rollback.\n")
	case KindPod:
		b.WriteString("A manifest takes effect when it is applied to the cluster; running pods keep their spec until they are recreated, so does the rollback.\n")
	case KindServiceLimits:
		b.WriteString("A service takes a new limit when systemd reloads its units and the service restarts (systemctl daemon-reload, then systemctl restart " + strings.Join(slices.Sorted(maps.Keys(g.Fix.Services)), " ") + "); the jobs it starts inherit it from then on, and so does the rollback.\n")
	default:
		b.WriteString("Hosts take the old values at their next configuration apply.\n")
	}
	fmt.Fprintf(&b, "\n<sub>fleetaudit remediate · branch `%s` · fingerprint `%s`</sub>\n", prop.Branch, short(prop.Fingerprint))
	return b.String()
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// mdEscape keeps text from the repo or hosts from being read as Markdown
// or HTML.
func mdEscape(s string) string {
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;", "`", "'", "\r", " ", "\n", " ")
	return r.Replace(s)
}
