package reports

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/policies"
)

// Changes is what changed since the previous recorded run, as the
// compliance reports show it: a store's drift between the two runs.
type Changes struct {
	// Previous is the run compared with.
	Previous RunInfo `json:"previous"`
	// New findings were not in the previous run; Resolved were, and this
	// run looked again and did not find them.
	New      []policies.Finding `json:"new"`
	Resolved []policies.Finding `json:"resolved"`
	// Unknown counts the previous run's findings this run could not look
	// for again (the host gone or not read, the rule not run): neither
	// open nor resolved.
	Unknown int `json:"unknown"`
	// Facts are the facts whose value, or the file that set it, changed
	// on hosts read in both runs.
	Facts []FactChange `json:"facts"`
	// Added hosts are only in this run, Gone only in the previous one.
	Added []HostRef `json:"added"`
	Gone  []HostRef `json:"gone"`
	// Unread counts hosts not read in one of the runs: their facts were
	// not compared.
	Unread int `json:"unread"`
}

// FactChange is one fact changed on one host. Before and After are the
// values as text ("" when absent); Source is the file that set the new
// value, or the old one's for a fact that went away.
type FactChange struct {
	Host   string `json:"host"`
	Fleet  string `json:"fleet"`
	Fact   string `json:"fact"`
	Change string `json:"change"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	Source string `json:"source,omitempty"`
}

// HostRef names a host and its fleet.
type HostRef struct {
	Host  string `json:"host"`
	Fleet string `json:"fleet"`
}

// ValueText writes a fact's value as the reports do.
func ValueText(v any) string { return slowValueText(v) }

// Empty reports whether nothing changed.
func (c *Changes) Empty() bool {
	return len(c.New) == 0 && len(c.Resolved) == 0 && len(c.Facts) == 0 && len(c.Added) == 0 && len(c.Gone) == 0
}

// Row limits of the changes' tables: past them a line says how many more.
const (
	changeFindingRows = 20
	changeFactRows    = 30
)

// changeGroup is one rule's new or resolved findings in one fleet.
type changeGroup struct {
	Severity, Rule, Title, Fleet string
	Hosts                        int
	HostList                     string
	// Mix are the severities behind Severity ("" when all one).
	Mix string
}

func changeGroups(findings []policies.Finding) []changeGroup {
	type key struct{ fleet, rule string }
	groups := map[key]*ruleGroup{}
	for i := range findings {
		f := &findings[i]
		k := key{f.Fleet, f.Rule}
		if groups[k] == nil {
			groups[k] = &ruleGroup{}
		}
		groups[k].add(f, nil)
	}
	out := make([]changeGroup, 0, len(groups))
	for k, g := range groups {
		out = append(out, changeGroup{Severity: g.Severity, Rule: k.rule, Title: g.Title, Fleet: k.fleet, Hosts: g.Hosts.Len(), HostList: g.Hosts.fold(6), Mix: mixLine(g.Open)})
	}
	slices.SortFunc(out, func(a, b changeGroup) int {
		return cmp.Or(-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
			-cmp.Compare(a.Hosts, b.Hosts), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Fleet, b.Fleet))
	})
	return out
}

// factGroup is one fact changed the same way, by the same file, on hosts.
type factGroup struct {
	Fact, Change, Before, After, Source string
	Hosts                               int
	HostList                            string
}

// Text is the change in words: "1 → 0", "added: 1", "removed (was 1)".
func (g factGroup) Text() string {
	before, after := truncate(g.Before, 60), truncate(g.After, 60)
	switch g.Change {
	case "added":
		return "added: " + after
	case "removed":
		return "removed (was " + before + ")"
	case "moved":
		return after + ", now set by another file"
	}
	return before + " → " + after
}

func factGroups(facts []FactChange) []factGroup {
	type key struct{ fact, change, before, after, source string }
	groups := map[key]*hostSet{}
	for _, f := range facts {
		k := key{f.Fact, f.Change, f.Before, f.After, f.Source}
		if groups[k] == nil {
			groups[k] = &hostSet{}
		}
		groups[k].add(f.Host)
	}
	out := make([]factGroup, 0, len(groups))
	for k, hs := range groups {
		out = append(out, factGroup{Fact: k.fact, Change: k.change, Before: k.before, After: k.after, Source: k.source, Hosts: hs.Len(), HostList: hs.fold(6)})
	}
	slices.SortFunc(out, func(a, b factGroup) int {
		return cmp.Or(-cmp.Compare(a.Hosts, b.Hosts), cmp.Compare(a.Fact, b.Fact), cmp.Compare(a.After, b.After), cmp.Compare(a.Source, b.Source))
	})
	return out
}

// hostLines folds hosts per fleet: "gpu-training: gpu-c-[001-004]".
func hostLines(hosts []HostRef) []string {
	by := map[string]*hostSet{}
	for _, h := range hosts {
		if by[h.Fleet] == nil {
			by[h.Fleet] = &hostSet{}
		}
		by[h.Fleet].add(h.Host)
	}
	var out []string
	for _, fleet := range slices.Sorted(maps.Keys(by)) {
		out = append(out, fmt.Sprintf("%s: %s", fleetLabel(fleet), by[fleet].fold(8)))
	}
	return out
}

// changedHosts counts the hosts with a changed fact.
func changedHosts(facts []FactChange) int {
	hosts := map[string]bool{}
	for _, f := range facts {
		hosts[f.Host] = true
	}
	return len(hosts)
}

// summary is the changes in one sentence.
func (c *Changes) summary() string {
	if c.Empty() {
		return "Nothing changed: no finding new or resolved, no fact changed, no host added or gone."
	}
	parts := []string{
		fmt.Sprintf("%d new %s", len(c.New), plural(len(c.New), "finding", "findings")),
		fmt.Sprintf("%d resolved", len(c.Resolved)),
		fmt.Sprintf("%d %s changed on %d %s", len(c.Facts), plural(len(c.Facts), "fact", "facts"), changedHosts(c.Facts), plural(changedHosts(c.Facts), "host", "hosts")),
		fmt.Sprintf("%d %s added, %d gone", len(c.Added), plural(len(c.Added), "host", "hosts"), len(c.Gone)),
	}
	return strings.Join(parts, ", ") + "."
}

// caveats say what the comparison could not cover.
func (c *Changes) caveats() []string {
	var out []string
	if c.Unknown > 0 {
		out = append(out, fmt.Sprintf("%d %s of the previous run could not be looked for again (host gone or not read, rule not run): neither open nor resolved.",
			c.Unknown, plural(c.Unknown, "finding", "findings")))
	}
	if c.Unread > 0 {
		out = append(out, fmt.Sprintf("%d %s not read in one of the runs: %s not compared.", c.Unread, plural(c.Unread, "host", "hosts"), plural(c.Unread, "its facts were", "their facts were")))
	}
	return out
}

// previousLabel names the previous run: "run 41 (2026-11-30 02:00 UTC)".
func previousLabel(r RunInfo) string {
	at := ""
	if !r.At.IsZero() {
		at = r.At.UTC().Format("2006-01-02 15:04 UTC")
	}
	switch {
	case r.ID != "" && at != "":
		return fmt.Sprintf("run %s (%s)", r.ID, at)
	case r.ID != "":
		return "run " + r.ID
	}
	return cmp.Or(at, "the previous run")
}

// Seen is when each open finding of a run was first seen, by SeenKey:
// what a history store knows of the runs before it.
type Seen map[string]FirstSeen

// FirstSeen is the first run of the unbroken stretch of recorded runs that
// held a finding. AtLeast: the history read went no further back, and the
// finding was in its oldest run.
type FirstSeen struct {
	Run     string    `json:"run,omitempty"`
	At      time.Time `json:"at"`
	AtLeast bool      `json:"at_least,omitempty"`
}

// SeenKey identifies a finding within one run: its host, rule, message
// and the facts it cites.
func SeenKey(f *policies.Finding) string {
	var b strings.Builder
	b.WriteString(f.Host + "\x00" + f.Fleet + "\x00" + f.Rule + "\x00" + f.Message)
	for _, e := range f.Evidence {
		b.WriteString("\x00" + e.Fact)
	}
	return b.String()
}

// OpenFor says how long a finding has been open at run: "new", "open 23
// days", "open 30 days or more"; "" when s has no word of it.
func (s Seen) OpenFor(f *policies.Finding, run RunInfo) string {
	fs, ok := s[SeenKey(f)]
	if !ok {
		return ""
	}
	return fs.text(run)
}

func (fs FirstSeen) text(run RunInfo) string {
	if !fs.AtLeast && (fs.Run != "" && fs.Run == run.ID || fs.At.Equal(run.At)) {
		return "new"
	}
	days := int(run.At.Sub(fs.At) / (24 * time.Hour))
	span := fmt.Sprintf("%d %s", days, plural(days, "day", "days"))
	if days < 1 {
		span = "under a day"
	}
	if fs.AtLeast {
		if days < 1 {
			return "open since " + previousLabel(RunInfo{ID: fs.Run, At: fs.At}) + " or before"
		}
		return "open " + span + " or more"
	}
	return "open " + span
}

// oldest is the earliest first sighting among findings; ok false when
// none is known.
func (s Seen) oldest(findings []*policies.Finding) (FirstSeen, bool) {
	var best FirstSeen
	found := false
	for _, f := range findings {
		fs, ok := s[SeenKey(f)]
		if !ok {
			continue
		}
		if !found || fs.At.Before(best.At) || fs.At.Equal(best.At) && fs.AtLeast {
			best, found = fs, true
		}
	}
	return best, found
}
