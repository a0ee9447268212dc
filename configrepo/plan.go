package configrepo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// DefaultMaxAge is how old a host's snapshot may be for the plan to trust it.
const DefaultMaxAge = 48 * time.Hour

// PlanHost is a recorded host the change is applied to.
type PlanHost struct {
	Name string
	// Origin names where its snapshot came from (a store run, a file).
	Origin string
	// Fleet is the fleet its run put it in; "" to match it by the profiles.
	Fleet string
	// CollectedAt is when its snapshot was taken; zero: read from it.
	CollectedAt time.Time
	// Unread says why the host was not read in its run ("" when read).
	Unread string
	// Read returns its snapshot document as JSON, read into buf's storage
	// when it fits.
	Read func(ctx context.Context, buf []byte) ([]byte, error)
}

// PlanOptions ask the gate for a per-host plan.
type PlanOptions struct {
	// Source names the hosts' origin for the report ("store PATH run N",
	// "snapshots DIR").
	Source string
	Hosts  []PlanHost
	// MaxAge is how old a snapshot may be; DefaultMaxAge when 0.
	MaxAge time.Duration
	// Now is the time ages are measured at; time.Now when zero.
	Now time.Time
	// Waivers, when set, mark the introduced findings they cover on each
	// host (by the repo fleet's name and the host's): a waived finding
	// fails nothing.
	Waivers *waivers.Set
}

// Plan is what the change does to each recorded host.
type Plan struct {
	Source string      `json:"source"`
	MaxAge string      `json:"max_age"`
	Fleets []PlanFleet `json:"fleets"`
	// NotPlanned are hosts the plan cannot speak for, with why; they are
	// never counted as unaffected.
	NotPlanned []NotPlanned `json:"not_planned"`
	Summary    PlanSummary  `json:"summary"`
}

// PlanFleet is one repo fleet's planned hosts.
type PlanFleet struct {
	Fleet   string `json:"fleet"`
	Profile string `json:"profile"`
	// Hosts is the number of planned hosts.
	Hosts int `json:"hosts"`
	// NewlyFailing are hosts the change gives findings, grouped by what it
	// gives them, most severe first; Fixed hosts lose findings and gain
	// none; Unchanged hosts neither.
	NewlyFailing []HostGroup `json:"newly_failing"`
	Fixed        []HostGroup `json:"fixed"`
	Unchanged    []HostGroup `json:"unchanged"`
}

// HostGroup is hosts the change does the same to.
type HostGroup struct {
	// Hosts are the hosts' names folded into ranges (FoldHosts).
	Hosts []string `json:"hosts"`
	Count int      `json:"count"`
	// Severity is the highest severity among Introduced ("" when none).
	Severity   string        `json:"severity,omitempty"`
	Introduced []PlanFinding `json:"introduced,omitempty"`
	Resolved   []PlanFinding `json:"resolved,omitempty"`
	// Overridden are settings the change makes that a host file of the
	// hosts' own overrides, so the change does not reach them.
	Overridden []Override `json:"overridden,omitempty"`
	// NotStacked are host files of the hosts' own that the plan leaves
	// out: their sections (boot configuration, NCCL config, service
	// drop-ins, firewall) come from the repo's files alone when it renders
	// one they read, so what these files set is not in the plan.
	NotStacked []string `json:"not_stacked,omitempty"`
	// Unset are sysctl and module facts the hosts had from a file at a
	// repo path and the rolled-out files leave unset: a host file the
	// repo's overrode may set them, and the snapshot does not hold it, so
	// the plan takes them as unset.
	Unset []string `json:"unset,omitempty"`
}

// PlanFinding is a finding introduced or resolved on a group's hosts.
type PlanFinding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Message  string `json:"message"`
	// Sources are where the cited values were set: the repo files and lines
	// of the change, and the hosts' own files.
	Sources []string `json:"sources"`
	// Waived is the waiver that covers the finding on the group's hosts.
	Waived *policies.Waived `json:"waived,omitempty"`

	finding policies.Finding
}

// Finding is the finding as the runner gave it on the first host of its
// group (for formats that take whole findings).
func (p PlanFinding) Finding() policies.Finding { return p.finding }

// Override is a setting of the change a host's own file overrides.
type Override struct {
	Fact string `json:"fact"`
	// Repo is the repo file and line that sets it; By the host file and line
	// that wins, with the value that stays.
	Repo  string `json:"repo"`
	By    string `json:"by"`
	Value any    `json:"value"`
}

// NotPlanned is a host the plan cannot speak for.
type NotPlanned struct {
	Host  string `json:"host"`
	Fleet string `json:"fleet,omitempty"`
	// Reason is "stale", "unread", "no-fleet", "error" or "duplicate".
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// PlanSummary counts the plan: the blast radius is the hosts that newly
// fail, by fleet and severity.
type PlanSummary struct {
	Hosts          int                  `json:"hosts"`
	Planned        int                  `json:"planned"`
	NewlyFailing   int                  `json:"newly_failing"`
	Fixed          int                  `json:"fixed"`
	Unchanged      int                  `json:"unchanged"`
	NotPlanned     int                  `json:"not_planned"`
	NewlyFailingBy []FleetSeverityHosts `json:"newly_failing_by"`
}

// FleetSeverityHosts counts hosts of a fleet whose worst introduced finding
// has a severity.
type FleetSeverityHosts struct {
	Fleet    string `json:"fleet"`
	Severity string `json:"severity"`
	Hosts    int    `json:"hosts"`
}

// MaxRank is the highest severity rank introduced on any planned host.
func (p *Plan) MaxRank() int {
	top := 0
	for _, f := range p.Fleets {
		for _, g := range f.NewlyFailing {
			top = max(top, policies.SeverityRank(g.Severity))
		}
	}
	return top
}

// planFleet is one repo fleet's renders, ready to lay over hosts.
type planFleet struct {
	name, profile string
	labels        map[string]string
	err           string
	managed, fed  map[string]bool
	sides         [2]*planSide // base, head; nil: the fleet is not at that side
	changed       map[string]bool
}

type planSide struct {
	files  fstest.MapFS
	layers map[string]string
	alone  map[string]any
}

// class is hosts whose snapshots are equal but for their name and time.
type class struct {
	key []byte
	// runFleet is the fleet the hosts' run put them in.
	runFleet string
	doc      map[string]any
	fleet    *planFleet
	enc      [2]classDoc
	over     []Override
	dropped  []string
	unset    []string
}

// classDoc is a side's rolled-out document as JSON with its host name cut
// out: each host's input is the two halves around its own name.
type classDoc struct {
	head, tail []byte
}

type plannedHost struct {
	name  string
	class *class
}

// plan applies the change to every host of opts.
func (g *gater) plan(ctx context.Context, base, head *side, res *Result, opts *PlanOptions) (*Plan, error) {
	maxAge := opts.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	plan := &Plan{Source: opts.Source, MaxAge: durationText(maxAge), Fleets: []PlanFleet{}, NotPlanned: []NotPlanned{},
		Summary: PlanSummary{NewlyFailingBy: []FleetSeverityHosts{}}}
	pf, err := g.planFleets(ctx, base, head, res)
	if err != nil {
		return nil, err
	}
	skip := func(h PlanHost, fleet, reason, detail string) {
		plan.NotPlanned = append(plan.NotPlanned, NotPlanned{Host: h.Name, Fleet: fleet, Reason: reason, Detail: detail})
	}
	seed := maphash.MakeSeed()
	classes := map[uint64][]*class{}
	names := map[string]bool{}
	var hosts []plannedHost
	reads := readHosts(ctx, opts.Hosts, seed, func(h PlanHost) bool {
		return h.Unread == "" && (h.CollectedAt.IsZero() || now.Sub(h.CollectedAt) <= maxAge)
	})
	for i, h := range opts.Hosts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		plan.Summary.Hosts++
		switch {
		case h.Name != "" && names[h.Name]:
			skip(h, h.Fleet, "duplicate", fmt.Sprintf("another snapshot of %s is planned already (%s)", h.Name, h.Origin))
			continue
		case h.Unread != "":
			skip(h, h.Fleet, "unread", fmt.Sprintf("not read in %s: %s", h.Origin, h.Unread))
			continue
		case !h.CollectedAt.IsZero() && now.Sub(h.CollectedAt) > maxAge:
			skip(h, h.Fleet, "stale", fmt.Sprintf("snapshot taken %s, older than --max-age %s", h.CollectedAt.UTC().Format(time.RFC3339), maxAge))
			continue
		}
		rd := reads(i)
		if rd.err != nil {
			skip(h, h.Fleet, "unread", fmt.Sprintf("%s: %v", h.Origin, rd.err))
			continue
		}
		if h.Name == "" {
			if h.Name = rd.host; h.Name == "" {
				skip(h, h.Fleet, "unread", fmt.Sprintf("%s: not a snapshot naming its host", h.Origin))
				continue
			}
			if names[h.Name] {
				skip(h, h.Fleet, "duplicate", fmt.Sprintf("another snapshot of %s is planned already (%s)", h.Name, h.Origin))
				continue
			}
		}
		if h.CollectedAt.IsZero() {
			t, err := time.Parse(time.RFC3339Nano, rd.collectedAt)
			if err != nil {
				skip(h, h.Fleet, "stale", fmt.Sprintf("%s: the snapshot has no collection time (collected_at), so its age is unknown", h.Origin))
				continue
			}
			if now.Sub(t) > maxAge {
				skip(h, h.Fleet, "stale", fmt.Sprintf("snapshot taken %s, older than --max-age %s", t.UTC().Format(time.RFC3339), maxAge))
				continue
			}
		}
		k := rd.sum ^ maphash.String(seed, h.Fleet)
		var c *class
		var doc map[string]any
		// Without a fleet from its run, the profiles place a host, and they
		// may match its name: a class is then one fleet's.
		byName := h.Fleet == "" && g.opts.Fleets != nil
		for _, x := range classes[k] {
			if x.runFleet == h.Fleet && equalSegments(x.key, rd.segments) {
				if doc = x.doc; !byName {
					c = x
					break
				}
				if fl, _ := g.matchFleet(pf, h, doc); fl == x.fleet {
					c = x
					break
				}
			}
		}
		if c == nil {
			if doc == nil {
				var err error
				if doc, err = snapshot.DecodeDocument(rd.raw); err != nil {
					skip(h, h.Fleet, "unread", fmt.Sprintf("%s: %v", h.Origin, err))
					continue
				}
				if e := unreadOf(doc); e != "" {
					skip(h, h.Fleet, "unread", fmt.Sprintf("%s: %s", h.Origin, e))
					continue
				}
			}
			fl, why := g.matchFleet(pf, h, doc)
			if fl == nil {
				skip(h, h.Fleet, "no-fleet", why)
				continue
			}
			c = &class{key: bytes.Join(rd.segments, nil), runFleet: h.Fleet, doc: doc, fleet: fl}
			classes[k] = append(classes[k], c)
		}
		if c.fleet.err != "" {
			skip(h, c.fleet.name, "error", c.fleet.err)
			continue
		}
		names[h.Name] = true
		hosts = append(hosts, plannedHost{name: h.Name, class: c})
	}
	// Each class rolled out at both sides.
	for _, list := range classes {
		for _, c := range list {
			if err := g.rollOut(ctx, c); err != nil {
				return nil, err
			}
		}
	}
	var found [2]map[string][]policies.Finding
	failed := map[string]string{}
	for side := range 2 {
		f, err := g.evaluatePlan(ctx, hosts, side, failed)
		if err != nil {
			return nil, err
		}
		found[side] = f
	}
	var waive func(*policies.Finding)
	if opts.Waivers != nil {
		_, waive = opts.Waivers.Stream(now, func(func(*policies.Finding, *policies.Finding) bool) {})
	}
	byFleet := map[string]*PlanFleet{}
	type outcome struct {
		kind  int // 0 newly failing, 1 fixed, 2 unchanged
		group *HostGroup
		names []string
	}
	groups := map[string]map[string]*outcome{}
	for _, h := range hosts {
		fl := h.class.fleet
		if why, bad := failed[h.name]; bad {
			plan.NotPlanned = append(plan.NotPlanned, NotPlanned{Host: h.name, Fleet: fl.name, Reason: "error", Detail: why})
			continue
		}
		intro, resolved := diffHost(found[0][h.name], found[1][h.name])
		for i := range intro {
			intro[i].Fleet = fl.name
			if waive != nil {
				waive(&intro[i])
			}
		}
		kind := 2
		switch {
		case len(intro) > 0:
			kind = 0
		case len(resolved) > 0:
			kind = 1
		}
		g := HostGroup{Introduced: planFindings(intro), Resolved: planFindings(resolved), Overridden: h.class.over, NotStacked: h.class.dropped, Unset: h.class.unset}
		for _, f := range intro {
			if f.Waived == nil && policies.SeverityRank(f.Severity) > policies.SeverityRank(g.Severity) {
				g.Severity = f.Severity
			}
		}
		sig, _ := json.Marshal(struct {
			K int
			G HostGroup
		}{kind, g})
		if groups[fl.name] == nil {
			groups[fl.name] = map[string]*outcome{}
			byFleet[fl.name] = &PlanFleet{Fleet: fl.name, Profile: fl.profile, NewlyFailing: []HostGroup{}, Fixed: []HostGroup{}, Unchanged: []HostGroup{}}
		}
		o := groups[fl.name][string(sig)]
		if o == nil {
			o = &outcome{kind: kind, group: &g}
			groups[fl.name][string(sig)] = o
		}
		o.names = append(o.names, h.name)
		byFleet[fl.name].Hosts++
	}
	bySev := map[[2]string]int{}
	for _, name := range slices.Sorted(maps.Keys(byFleet)) {
		fr := byFleet[name]
		for _, o := range groups[name] {
			o.group.Count = len(o.names)
			o.group.Hosts = FoldHosts(o.names)
			switch o.kind {
			case 0:
				fr.NewlyFailing = append(fr.NewlyFailing, *o.group)
				plan.Summary.NewlyFailing += o.group.Count
				sev := o.group.Severity
				if sev == "" {
					sev = "waived" // every finding it introduces is waived
				}
				bySev[[2]string{name, sev}] += o.group.Count
			case 1:
				fr.Fixed = append(fr.Fixed, *o.group)
				plan.Summary.Fixed += o.group.Count
			default:
				fr.Unchanged = append(fr.Unchanged, *o.group)
				plan.Summary.Unchanged += o.group.Count
			}
		}
		for _, list := range [][]HostGroup{fr.NewlyFailing, fr.Fixed, fr.Unchanged} {
			slices.SortFunc(list, func(a, b HostGroup) int {
				return cmp.Or(-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
					-cmp.Compare(a.Count, b.Count), slices.Compare(a.Hosts, b.Hosts))
			})
		}
		plan.Summary.Planned += fr.Hosts
		plan.Fleets = append(plan.Fleets, *fr)
	}
	for _, k := range slices.SortedFunc(maps.Keys(bySev), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), -cmp.Compare(policies.SeverityRank(a[1]), policies.SeverityRank(b[1])))
	}) {
		plan.Summary.NewlyFailingBy = append(plan.Summary.NewlyFailingBy, FleetSeverityHosts{Fleet: k[0], Severity: k[1], Hosts: bySev[k]})
	}
	slices.SortStableFunc(plan.NotPlanned, func(a, b NotPlanned) int {
		return cmp.Or(cmp.Compare(a.Fleet, b.Fleet), cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Host, b.Host))
	})
	plan.Summary.NotPlanned = len(plan.NotPlanned)
	return plan, nil
}

// unreadOf is why nothing of a snapshot's host was read, "" when it was.
func unreadOf(doc map[string]any) string {
	errs, _ := doc["errors"].([]any)
	for _, x := range errs {
		e := asMap(x)
		if e["collector"] == snapshot.CollectorSource {
			return fmt.Sprintf("%v: %v", e["path"], e["reason"])
		}
	}
	return ""
}

// identity is a snapshot's bytes less the values of its top-level "host"
// and "collected_at" members (the segments around them), with their text:
// snapshots that differ only in those are one class. Bytes that are not a
// JSON object are their own key.
func identity(raw []byte) (segments [][]byte, host, collectedAt string) {
	var cuts [][2]int
	i := skipSpace(raw, 0)
	whole := [][]byte{raw}
	if i >= len(raw) || raw[i] != '{' {
		return whole, "", ""
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] == '}' {
			break
		}
		if raw[i] == ',' {
			i++
			continue
		}
		nameEnd := skipValue(raw, i)
		if nameEnd < 0 || raw[i] != '"' {
			return whole, "", ""
		}
		name := string(raw[i+1 : nameEnd-1])
		i = skipSpace(raw, nameEnd)
		if i >= len(raw) || raw[i] != ':' {
			return whole, "", ""
		}
		start := skipSpace(raw, i+1)
		end := skipValue(raw, start)
		if end < 0 {
			return whole, "", ""
		}
		if name == "host" || name == "collected_at" {
			var v string
			if json.Unmarshal(raw[start:end], &v) == nil {
				cuts = append(cuts, [2]int{start, end})
				if name == "host" {
					host = v
				} else {
					collectedAt = v
				}
			}
		}
		i = end
	}
	at := 0
	for _, c := range cuts {
		segments = append(segments, raw[at:c[0]])
		at = c[1]
	}
	return append(segments, raw[at:]), host, collectedAt
}

// equalSegments reports whether the segments joined are key.
func equalSegments(key []byte, segments [][]byte) bool {
	for _, s := range segments {
		if len(s) > len(key) || !bytes.Equal(key[:len(s)], s) {
			return false
		}
		key = key[len(s):]
	}
	return len(key) == 0
}

// hostRead is one host's snapshot as read, with its identity.
type hostRead struct {
	raw               []byte
	segments          [][]byte
	sum               uint64
	host, collectedAt string
	err               error
}

// readChunk is how many hosts are read ahead, side by side: a store's
// snapshots are decompressed on every core, and only a chunk of them is
// held at a time.
const readChunk = 64

// readHosts reads the snapshots of the hosts want keeps, a chunk at a time
// on every core, and returns the read of host i (in order: a chunk is
// released when the next is read).
func readHosts(ctx context.Context, hosts []PlanHost, seed maphash.Seed, want func(PlanHost) bool) func(i int) *hostRead {
	buf := make([]hostRead, readChunk)
	// Each slot's storage is reused from chunk to chunk.
	storage := make([][]byte, readChunk)
	from := -1
	workers := runtime.GOMAXPROCS(0)
	return func(i int) *hostRead {
		if from < 0 || i >= from+readChunk {
			from = i - i%readChunk
			clear(buf)
			var eg errgroup.Group
			eg.SetLimit(workers)
			for j := range readChunk {
				if from+j >= len(hosts) || !want(hosts[from+j]) {
					continue
				}
				eg.Go(func() error {
					rd := &buf[j]
					rd.raw, rd.err = hosts[from+j].Read(ctx, storage[j][:0])
					if rd.err != nil {
						return nil
					}
					if cap(rd.raw) > cap(storage[j]) {
						storage[j] = rd.raw
					}
					rd.segments, rd.host, rd.collectedAt = identity(rd.raw)
					var h maphash.Hash
					h.SetSeed(seed)
					for _, s := range rd.segments {
						h.Write(s)
					}
					rd.sum = h.Sum64()
					return nil
				})
			}
			eg.Wait()
		}
		return &buf[i-from]
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value at b[i:], or -1 when it is
// cut short. It does not validate: the document is decoded afterwards.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			if i = skipString(b, i); i < 0 || depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\n', '\t', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	if depth == 0 {
		return i
	}
	return -1
}

// skipString returns the end of the JSON string whose opening quote is at
// b[i], or -1 when it is cut short.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		k := i - 1
		for k >= 0 && b[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i + 1
		}
		i++
	}
}

// planFleets prepares every repo fleet's renders at base and head.
func (g *gater) planFleets(ctx context.Context, base, head *side, res *Result) (map[string]*planFleet, error) {
	out := map[string]*planFleet{}
	changed := map[string][]string{}
	for _, f := range res.Fleets {
		changed[f.Fleet] = f.Changed
	}
	for i, s := range []*side{base, head} {
		for name, run := range s.fleets {
			pf := out[name]
			if pf == nil {
				pf = &planFleet{name: name, managed: map[string]bool{}, fed: map[string]bool{}, changed: map[string]bool{}}
				for _, c := range changed[name] {
					pf.changed[c] = true
				}
				out[name] = pf
			}
			if s.manifest != nil {
				pf.profile = s.manifest.ProfileOf(name)
				if spec := s.manifest.Fleets[name]; spec != nil {
					pf.labels = spec.Labels
				}
			}
			if run.rendered == nil || run.err != nil && !run.audited {
				pf.err = fmt.Sprintf("fleet %s at %s: %v", name, s.co.Label(), run.err)
				continue
			}
			r := run.rendered
			files, layers, err := renderedFiles(r)
			if err != nil {
				pf.err = err.Error()
				continue
			}
			for p := range r.Digests {
				if strings.HasPrefix(p, "/") {
					pf.managed[p] = true
				}
			}
			snap, err := collectors.Collect(ctx, collectors.Target{Origin: snapshot.Origin{Kind: SourceKind}, Files: overlay{Source: collectors.FS(files), layers: layers}},
				collectors.Options{Hostname: name, Version: g.opts.Version, ConfigOnly: true})
			if err != nil {
				return nil, err
			}
			alone, err := snapshot.Document(snap)
			if err != nil {
				return nil, err
			}
			fedBy(alone, len(layers) > 0, pf.fed)
			pf.sides[i] = &planSide{files: files, layers: layers, alone: alone}
		}
	}
	return out, nil
}

// matchFleet is the repo fleet that renders a host's files: the one whose
// labels the host carries all of, else the one named as the host's fleet or
// profile.
func (g *gater) matchFleet(pf map[string]*planFleet, h PlanHost, doc map[string]any) (*planFleet, string) {
	fleet := h.Fleet
	if fleet == "" && g.opts.Fleets != nil {
		fleet, _ = g.opts.Fleets.FleetOf(fleets.FactsOf(h.Name, nil, doc))
	}
	labels := map[string]string{}
	for k, v := range asMap(doc["labels"]) {
		labels[k] = fmt.Sprint(v)
	}
	var byLabel, byName []string
	for _, name := range slices.Sorted(maps.Keys(pf)) {
		want := pf[name].labels
		switch {
		case len(want) > 0:
			if hasLabels(labels, want) {
				byLabel = append(byLabel, name)
			}
		case fleet != "" && (fleet == name || fleet == pf[name].profile):
			byName = append(byName, name)
		}
	}
	match := byLabel
	if len(match) == 0 {
		match = byName
	}
	switch len(match) {
	case 1:
		return pf[match[0]], ""
	case 0:
		if fleet == "" {
			return nil, "no fleet of the repo renders this host's files (it is in no fleet)"
		}
		return nil, fmt.Sprintf("no fleet of the repo renders this host's files (its fleet is %s)", fleet)
	}
	return nil, fmt.Sprintf("several fleets of the repo match this host (%s)", strings.Join(match, ", "))
}

// rollOut makes a class's documents at base and head, and finds the
// settings of the change its hosts' own files override.
func (g *gater) rollOut(ctx context.Context, c *class) error {
	fl := c.fleet
	var docs [2]map[string]any
	dropped, unset := map[string]bool{}, map[string]bool{}
	for i, s := range fl.sides {
		doc := c.doc
		if s != nil {
			var err error
			doc, err = rolledOut(ctx, c.doc, "", s.files, s.layers, fl.managed, fl.fed, g.opts.Version)
			if err != nil {
				return err
			}
			notStacked(c.doc, doc, fl.managed, dropped)
			unsetBeneath(c.doc, doc, fl.managed, unset)
		}
		docs[i] = doc
		enc, err := encodeWithout(doc)
		if err != nil {
			return err
		}
		c.enc[i] = enc
	}
	if h := fl.sides[1]; h != nil {
		c.over = overrides(h.alone, docs[1], fl)
	}
	if len(dropped) > 0 {
		c.dropped = slices.Sorted(maps.Keys(dropped))
	}
	if len(unset) > 0 {
		c.unset = slices.Sorted(maps.Keys(unset))
	}
	return nil
}

// unsetBeneath adds to into the configured sysctls and the modules loaded,
// blacklisted or given an install command that the host had from a file at
// a repo path and no repo file sets after the rollout (the first setting
// of a module wins, so a host file after the repo's was not recorded).
func unsetBeneath(host, rolled map[string]any, managed, into map[string]bool) {
	rs := asMap(rolled["sources"])
	for k, v := range asMap(host["sources"]) {
		if !slices.ContainsFunc([]string{"sysctl.configured.", "modules.configured.", "modules.blacklisted.", "modules.install."},
			func(p string) bool { return strings.HasPrefix(k, p) }) {
			continue
		}
		if p := snapshot.ParseProvenance(fmt.Sprint(v)); p.Layer == "" && !managed[p.File] {
			continue
		}
		if got, ok := rs[k]; ok {
			if q := snapshot.ParseProvenance(fmt.Sprint(got)); q.Layer != "" || managed[q.File] {
				continue
			}
		}
		into[k] = true
	}
}

// notStacked adds to into the host's own files whose settings the
// rolled-out document leaves out: files of sections the repo's files
// replace whole (modules are stacked line by line).
func notStacked(host, rolled map[string]any, managed, into map[string]bool) {
	rs := asMap(rolled["sources"])
	for k, v := range asMap(host["sources"]) {
		sec, _, _ := strings.Cut(k, ".")
		if sec == "modules" || !slices.Contains(fedSections, sec) || rs[k] == v {
			continue
		}
		p := snapshot.ParseProvenance(fmt.Sprint(v))
		for _, q := range append([]snapshot.Provenance{p}, p.More...) {
			if q.Layer != "" || q.Default != "" || q.Command != "" || !strings.HasPrefix(q.File, "/") || managed[q.File] ||
				strings.HasPrefix(q.File, "/proc/") || strings.HasPrefix(q.File, "/sys/") {
				continue
			}
			into[q.File] = true
		}
	}
}

// planHostMark stands for the host name in a class's encoded document.
const planHostMark = "\x00fleetaudit-plan-host\x00"

func encodeWithout(doc map[string]any) (classDoc, error) {
	d := maps.Clone(doc)
	d["host"] = planHostMark
	delete(d, "collected_at")
	b, err := json.Marshal(d)
	if err != nil {
		return classDoc{}, err
	}
	mark, _ := json.Marshal(planHostMark)
	i := bytes.Index(b, mark)
	if i < 0 {
		return classDoc{}, fmt.Errorf("encoding a planned host: no host member")
	}
	return classDoc{head: b[:i], tail: b[i+len(mark):]}, nil
}

// overrides are the settings of changed repo files that the rolled-out
// document takes from a host file instead.
func overrides(alone, rolled map[string]any, fl *planFleet) []Override {
	var out []Override
	rs := asMap(rolled["sources"])
	for k, v := range asMap(alone["sources"]) {
		p := snapshot.ParseProvenance(fmt.Sprint(v))
		if p.Layer == "" || !fl.changed[p.Path()] {
			continue
		}
		got, ok := rs[k]
		if !ok {
			continue
		}
		q := snapshot.ParseProvenance(fmt.Sprint(got))
		if q.Layer != "" || q.File == "" || q.Default != "" || q.Command != "" {
			continue
		}
		if strings.HasPrefix(k, "sysctl.running.") {
			continue // the configured key says it
		}
		val, _ := snapshot.Lookup(rolled, k)
		out = append(out, Override{Fact: k, Repo: p.String(), By: q.String(), Value: val})
	}
	slices.SortFunc(out, func(a, b Override) int { return cmp.Compare(a.Fact, b.Fact) })
	return out
}

// evaluatePlan audits every planned host at one side through the runner,
// and returns each host's findings. Hosts the runner could not evaluate in
// full go to failed.
func (g *gater) evaluatePlan(ctx context.Context, hosts []plannedHost, side int, failed map[string]string) (map[string][]policies.Finding, error) {
	profile := make(map[string]string, len(hosts))
	for _, h := range hosts {
		profile[h.name] = h.class.fleet.profile
	}
	ref := [2]string{"base", "head"}[side]
	inputs := func(yield func(fleetrun.HostInput) bool) {
		for _, h := range hosts {
			enc := h.class.enc[side]
			name := h.name
			in := fleetrun.HostInput{
				Origin: name,
				Name:   name,
				Read: func(_ context.Context, buf []byte) ([]byte, error) {
					q, _ := json.Marshal(name)
					out := append(buf[:0], enc.head...)
					out = append(out, q...)
					return append(out, enc.tail...), nil
				},
			}
			in.Load = func(ctx context.Context) (map[string]any, error) {
				b, _ := in.Read(ctx, nil)
				return snapshot.DecodeDocument(b)
			}
			if !yield(in) {
				return
			}
		}
	}
	a, err := fleetrun.RunAudit(ctx, g.engine, inputs, fleetrun.RunOptions{
		FleetOf:     func(host string, _ map[string]any) string { return profile[host] },
		HostTimeout: g.opts.RuleTimeout,
		Hosts:       len(hosts),
	})
	if err != nil {
		return nil, err
	}
	for h := range a.Hosts() {
		if len(h.TimedOut) > 0 {
			failed[h.Host] = fmt.Sprintf("at %s, rules %s did not finish within %s (--rule-timeout)", ref, strings.Join(h.TimedOut, ", "), g.budget())
		}
		if h.Unread != "" {
			failed[h.Host] = fmt.Sprintf("at %s: %s", ref, h.Unread)
		}
	}
	for _, f := range a.Failures {
		for _, h := range hosts {
			if f.Host == h.name || f.Host == "" && f.Fleet == h.class.fleet.profile {
				failed[h.name] = fmt.Sprintf("at %s: %v", ref, f.Err)
			}
		}
	}
	out := map[string][]policies.Finding{}
	for _, f := range a.Findings() {
		out[f.Host] = append(out[f.Host], f)
	}
	return out, nil
}

// diffHost matches a host's findings at base and head by rule and the
// facts they cite.
func diffHost(base, head []policies.Finding) (introduced, resolved []policies.Finding) {
	left := map[string]int{}
	for _, f := range base {
		left[policies.FindingKey(f, nil)]++
	}
	for _, f := range head {
		k := policies.FindingKey(f, nil)
		if left[k] > 0 {
			left[k]--
			continue
		}
		introduced = append(introduced, f)
	}
	right := map[string]int{}
	for _, f := range head {
		right[policies.FindingKey(f, nil)]++
	}
	for _, f := range base {
		k := policies.FindingKey(f, nil)
		if right[k] > 0 {
			right[k]--
			continue
		}
		resolved = append(resolved, f)
	}
	return introduced, resolved
}

// planFindings are findings as a plan names them (no host), most severe
// first.
func planFindings(fs []policies.Finding) []PlanFinding {
	var out []PlanFinding
	for _, f := range fs {
		pf := PlanFinding{Rule: f.Rule, Severity: f.Severity, Title: f.Title, Message: f.Message, Sources: []string{}, Waived: f.Waived, finding: f}
		for _, e := range f.Evidence {
			if e.Source != "" && !slices.Contains(pf.Sources, e.Source) {
				pf.Sources = append(pf.Sources, e.Source)
			}
		}
		// The repo's files first: they are what the change can fix.
		slices.SortStableFunc(pf.Sources, func(a, b string) int {
			return cmp.Compare(btoi(!strings.HasPrefix(a, "layers/")), btoi(!strings.HasPrefix(b, "layers/")))
		})
		out = append(out, pf)
	}
	slices.SortStableFunc(out, func(a, b PlanFinding) int {
		return cmp.Or(-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// durationText is a duration as a flag takes it, without zero units: "48h".
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
