package reports

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// Compliance is the input of the HTML compliance report: which fleets pass
// which controls, the top hazards, the waivers, and the trend over recorded
// runs. NewCompliance builds it from one audit; a history store fills Trend
// with the points of earlier runs (see TrendPoint), oldest first. With no
// store the trend holds the current run only.
type Compliance struct {
	// Title heads the report ("fleetaudit compliance report" when empty).
	Title string `json:"title,omitempty"`
	// Gate is set for a gate's report: each fleet's rendered configuration
	// is one subject, and there is no trend.
	Gate bool `json:"gate,omitempty"`
	// Run is the run the report describes.
	Run RunInfo `json:"run"`
	// Fleets are sorted by name; "" is hosts that match no fleet.
	Fleets []FleetCompliance `json:"fleets"`
	// Findings are the run's findings, waived ones marked (Finding.Waived);
	// the top hazards are drawn from the unwaived ones.
	Findings []policies.Finding `json:"findings"`
	// Errors are hosts or inputs not audited in full.
	Errors []audit.HostError `json:"errors,omitempty"`
	// Waivers is what the waivers file did; nil when none was read.
	Waivers *waivers.Report `json:"waivers,omitempty"`
	// Trend are one point per fleet per run, oldest run first, the current
	// run included (NewCompliance adds it).
	Trend []TrendPoint `json:"trend"`
	// Changes are what changed since the previous recorded run; nil
	// without a store, or for its first run.
	Changes *Changes `json:"changes,omitempty"`
	// Seen is when each open finding was first seen; nil without a store.
	Seen Seen `json:"-"`
}

// RunInfo names the run a report is about.
type RunInfo struct {
	// ID is the store's run id; "" for a run that was not recorded.
	ID string `json:"id,omitempty"`
	// At is when the run was made.
	At time.Time `json:"at"`
	// Hosts, Audited and Unread are audit.Summary's counts.
	Hosts   int `json:"hosts"`
	Audited int `json:"audited"`
	Unread  int `json:"unread"`
}

// FleetCompliance is one fleet's controls.
type FleetCompliance struct {
	Fleet string `json:"fleet"`
	// Hosts are the fleet's hosts, Audited those whose facts were read.
	Hosts   int `json:"hosts"`
	Audited int `json:"audited"`
	// Controls are the rules the fleet's profile runs, worst pass rate
	// first.
	Controls []Control `json:"controls"`
}

// Control is one rule's result over one fleet's hosts.
type Control struct {
	Rule     string `json:"rule"`
	Title    string `json:"title"`
	Severity string `json:"severity"`
	// Checked are the hosts the rule ran on (audited hosts where its facts
	// were collected); a host it did not run on neither passes nor fails.
	Checked int `json:"checked"`
	// Failing are checked hosts with an unwaived finding of the rule;
	// Waived those whose findings are all waived (they count as passing).
	Failing int `json:"failing"`
	Waived  int `json:"waived"`
	// Open counts the failing hosts by the severity of their worst open
	// finding; Severity is the highest of them when any fail.
	Open map[string]int `json:"open,omitempty"`
}

// Mix writes the severities of the failing hosts, "1 critical, 9 high";
// "" when they are all one.
func (c Control) Mix() string { return mixLine(c.Open) }

// PassRate is the share of checked hosts without an unwaived finding, 1
// when none was checked (the report says "not checked" then).
func (c Control) PassRate() float64 {
	if c.Checked == 0 {
		return 1
	}
	return float64(c.Checked-c.Failing) / float64(c.Checked)
}

// TrendPoint is one fleet in one run, what the trend chart plots. A store
// records the points NewCompliance computed for a run (Compliance.Trend's
// last points, those whose Run is Compliance.Run) or recomputes them from
// the run's hosts and findings the same way.
type TrendPoint struct {
	Run   string    `json:"run,omitempty"`
	At    time.Time `json:"at"`
	Fleet string    `json:"fleet"`
	// Checks are host × control pairs evaluated; Failing those with an
	// unwaived finding. The chart plots 1 - Failing/Checks.
	Checks  int `json:"checks"`
	Failing int `json:"failing"`
	// Findings counts unwaived findings by severity.
	Findings map[string]int `json:"findings"`
	// Incomplete marks a run that did not finish (a store's partial run).
	Incomplete bool `json:"incomplete,omitempty"`
}

// PassRate is the share of passing checks, 1 when there were none.
func (p TrendPoint) PassRate() float64 {
	if p.Checks == 0 {
		return 1
	}
	return float64(p.Checks-p.Failing) / float64(p.Checks)
}

// Catalog is what the reports know of the rules beyond their findings:
// metadata (SARIF's rule descriptors, controls' titles) and which rules
// each fleet runs (controls that pass have no finding to name them).
type Catalog struct {
	Rules map[string]policies.Rule `json:"rules"`
	// FleetRules are the rule ids each fleet's profile runs.
	FleetRules map[string][]string `json:"fleet_rules"`
}

// NewCatalog is the catalog of an engine's rules (policies.Engine.Rules)
// with each fleet profile of set: the rules it runs, as the engine selects
// them (fleet "" runs the rules for every fleet). collection-error is left
// out: it reports blind spots and is no control.
func NewCatalog(rules []policies.Rule, set *fleets.Set) (*Catalog, error) {
	cat := &Catalog{Rules: map[string]policies.Rule{}, FleetRules: map[string][]string{}}
	for _, r := range rules {
		if r.ID == policies.CollectionErrorRule {
			continue
		}
		cat.Rules[r.ID] = r
		if slices.Contains(r.Profiles, policies.ProfileAll) {
			cat.FleetRules[""] = append(cat.FleetRules[""], r.ID)
		}
	}
	if set == nil {
		return cat, nil
	}
	for _, name := range set.Names() {
		if name == fleets.Common {
			continue
		}
		p, err := set.Resolve(name)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			if r.ID != policies.CollectionErrorRule && p.Selects(r) {
				cat.FleetRules[name] = append(cat.FleetRules[name], r.ID)
			}
		}
	}
	return cat, nil
}

// NewCompliance builds the report's input from one audit result. hosts
// are the run's hosts as the engine audited them (audit.Result.HostRuns): a
// control counts only the hosts it ran on. cat may be nil: then the
// controls are the rules with findings. The current run's trend points are
// appended after prior (a store's earlier runs, oldest first).
func NewCompliance(res *audit.Result, cat *Catalog, run RunInfo, prior []TrendPoint) *Compliance {
	c := &Compliance{Run: run, Findings: res.Findings, Errors: res.Errors, Waivers: res.Waivers}
	c.Run.Hosts, c.Run.Audited, c.Run.Unread = res.Summary.Hosts, res.Summary.Audited, res.Summary.Unread
	type hostRule struct{ fleet, host, rule string }
	failing := map[hostRule]bool{} // host has an unwaived finding of rule
	worst := map[hostRule]string{} // the severity of its worst one
	for _, f := range res.Findings {
		k := hostRule{f.Fleet, f.Host, f.Rule}
		failing[k] = failing[k] || f.Waived == nil
		if w, ok := worst[k]; f.Waived == nil && (!ok || policies.SeverityRank(f.Severity) > policies.SeverityRank(w)) {
			worst[k] = f.Severity
		}
	}
	type fleetRule struct{ fleet, rule string }
	skipped := map[fleetRule]int{}
	audited := map[string]int{}
	unreadHost := map[[2]string]bool{}
	podRules := cat.podRules()
	if hosts := res.HostRuns(); hosts != nil {
		for h := range hosts {
			if h.Unread != "" {
				unreadHost[[2]string{h.Fleet, h.Host}] = true
				continue
			}
			audited[h.Fleet]++
			for _, id := range notRun(h, podRules) {
				skipped[fleetRule{h.Fleet, id}]++
			}
		}
	} else {
		// A result without its hosts (read back from JSON): every host the
		// summary counts as audited is taken as checked.
		for name, fs := range res.Summary.Fleets {
			audited[name] = fs.Hosts
		}
	}
	names := make([]string, 0, len(res.Summary.Fleets))
	for name := range res.Summary.Fleets {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fc := FleetCompliance{Fleet: name, Hosts: res.Summary.Fleets[name].Hosts, Audited: audited[name]}
		var ids []string
		if cat != nil {
			ids = slices.Clone(cat.FleetRules[name])
		}
		for _, f := range res.Findings {
			if f.Fleet == name && f.Rule != "collection-error" && !slices.Contains(ids, f.Rule) {
				ids = append(ids, f.Rule)
			}
		}
		for _, id := range ids {
			ctl := Control{Rule: id, Checked: max(0, audited[name]-skipped[fleetRule{name, id}])}
			if cat != nil {
				if r, ok := cat.Rules[id]; ok {
					ctl.Title, ctl.Severity = r.Title, r.Severity
				}
			}
			for k, bad := range failing {
				if k.fleet != name || k.rule != id || unreadHost[[2]string{k.fleet, k.host}] {
					continue
				}
				if bad {
					ctl.Failing++
					if ctl.Open == nil {
						ctl.Open = map[string]int{}
					}
					ctl.Open[worst[k]]++
				} else {
					ctl.Waived++
				}
			}
			for _, f := range res.Findings {
				if f.Fleet == name && f.Rule == id {
					// The findings' severity is the fleet's (profile overrides).
					ctl.Title = cmp.Or(f.Title, ctl.Title)
					if policies.SeverityRank(f.Severity) > policies.SeverityRank(ctl.Severity) || ctl.Severity == "" {
						ctl.Severity = f.Severity
					}
				}
			}
			if len(ctl.Open) > 0 {
				// The label is the worst failing host's, not the catalog's
				// nor a waived finding's.
				ctl.Severity = ""
				for sev := range ctl.Open {
					if ctl.Severity == "" || policies.SeverityRank(sev) > policies.SeverityRank(ctl.Severity) {
						ctl.Severity = sev
					}
				}
			}
			ctl.Checked = max(ctl.Checked, ctl.Failing+ctl.Waived)
			fc.Controls = append(fc.Controls, ctl)
		}
		slices.SortStableFunc(fc.Controls, func(a, b Control) int {
			return cmp.Or(cmp.Compare(a.PassRate(), b.PassRate()),
				-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
				cmp.Compare(a.Rule, b.Rule))
		})
		c.Fleets = append(c.Fleets, fc)
	}
	c.Trend = append(slices.Clone(prior), c.CurrentTrend()...)
	return c
}

// podRules are the rules of cat that read nothing but pods: they judge no
// host whose pods were not read (absent pods are none to them, and they
// would pass it).
func (cat *Catalog) podRules() []string {
	if cat == nil {
		return nil
	}
	var out []string
	for id, r := range cat.Rules {
		if readsPodsOnly(r) {
			out = append(out, id)
		}
	}
	return out
}

// notRun are the rules that did not judge host h: those it skipped and,
// when its pods were not read, podRules.
func notRun(h fleetrun.HostRun, podRules []string) []string {
	if !h.PodsUnread || len(podRules) == 0 {
		return h.Skipped
	}
	out := slices.Clone(h.Skipped)
	for _, id := range podRules {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// readsPodsOnly reports whether every fact r reads is in the pods section.
func readsPodsOnly(r policies.Rule) bool {
	for _, f := range r.Facts {
		if f != "pods" && !strings.HasPrefix(f, "pods.") && !strings.HasPrefix(f, "pods[") {
			return false
		}
	}
	return len(r.Facts) > 0
}

// CurrentTrend computes the trend points of c's own run, one per fleet:
// what a store records beside the run.
func (c *Compliance) CurrentTrend() []TrendPoint {
	var out []TrendPoint
	for _, fc := range c.Fleets {
		p := TrendPoint{Run: c.Run.ID, At: c.Run.At, Fleet: fc.Fleet, Findings: map[string]int{}}
		for _, ctl := range fc.Controls {
			p.Checks += ctl.Checked
			p.Failing += ctl.Failing
		}
		for _, f := range c.Findings {
			if f.Fleet == fc.Fleet && f.Waived == nil {
				p.Findings[f.Severity]++
			}
		}
		out = append(out, p)
	}
	return out
}
