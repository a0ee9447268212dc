package reports

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

// The HTML compliance report is one self-contained file: inline CSS, an
// inline SVG chart, no script, no font, no image, and a Content Security
// Policy that forbids every fetch, so opening it never touches the network.
// Print CSS keeps it readable on paper.

//go:embed html.tmpl
var htmlTemplate string

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":       func(f float64) string { return fmt.Sprintf("%.0f%%", math.Floor(f*100)) },
	"pctWidth":  func(f float64) string { return fmt.Sprintf("%.1f", f*100) },
	"fleetName": fleetLabel,
	"date": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"sevClass": func(s string) string {
		if policies.SeverityRank(s) == 0 {
			return "sev-unknown"
		}
		return "sev-" + s
	},
	"plural": plural,
	"scope":  scopeText,
}).Parse(htmlTemplate))

// htmlRenderer renders an audit as the compliance report.
type htmlFormat struct{}

func (htmlFormat) Name() string       { return "html" }
func (htmlFormat) Streams() bool      { return false }
func (htmlFormat) NeedsCatalog() bool { return true }
func (htmlFormat) Compliance() bool   { return true }

func (htmlFormat) Render(w io.Writer, r *audit.Result, opts Options) error {
	c := NewCompliance(r, opts.Catalog, opts.Run, opts.Trend)
	c.Changes, c.Seen = opts.Changes, opts.Seen
	return RenderHTML(w, c)
}

// htmlGate renders a gate as a compliance report of head: each fleet's
// rendered configuration is one subject, a control fails when head holds an
// unwaived finding of it.
func (htmlFormat) RenderGate(w io.Writer, r *configrepo.Result, opts Options) error {
	c := &Compliance{Title: fmt.Sprintf("fleetaudit gate: %s → %s", refLabel(r.Base), refLabel(r.Head)), Gate: true, Run: opts.Run}
	for _, fl := range r.Fleets {
		if fl.Status == "removed" {
			continue
		}
		fc := FleetCompliance{Fleet: fl.Fleet, Hosts: 1, Audited: 1}
		if fl.Status == "error" {
			fc.Audited = 0
		}
		c.Run.Hosts++
		c.Run.Audited += fc.Audited
		head := append(slices.Clone(fl.Introduced), fl.Unchanged...)
		c.Findings = append(c.Findings, head...)
		var ids []string
		if opts.Catalog != nil {
			ids = slices.Clone(opts.Catalog.FleetRules[cmp.Or(fl.Profile, fl.Fleet)])
		}
		for _, f := range head {
			if !slices.Contains(ids, f.Rule) {
				ids = append(ids, f.Rule)
			}
		}
		for _, id := range ids {
			ctl := Control{Rule: id, Checked: fc.Audited}
			if opts.Catalog != nil {
				ctl.Title, ctl.Severity = opts.Catalog.Rules[id].Title, opts.Catalog.Rules[id].Severity
			}
			bad, waived := false, false
			for _, f := range head {
				if f.Rule == id {
					ctl.Title, ctl.Severity = cmp.Or(f.Title, ctl.Title), f.Severity
					bad = bad || f.Waived == nil
					waived = waived || f.Waived != nil
				}
			}
			if bad {
				ctl.Failing = 1
			} else if waived {
				ctl.Waived = 1
			}
			fc.Controls = append(fc.Controls, ctl)
		}
		slices.SortStableFunc(fc.Controls, func(a, b Control) int {
			return cmp.Or(cmp.Compare(a.PassRate(), b.PassRate()), cmp.Compare(a.Rule, b.Rule))
		})
		c.Fleets = append(c.Fleets, fc)
	}
	c.Waivers = r.Waivers
	for _, e := range r.Errors {
		c.Errors = append(c.Errors, audit.HostError{Fleet: e.Fleet, Source: e.Ref, Error: e.Error})
	}
	return RenderHTML(w, c)
}

// htmlView is what the template reads.
type htmlView struct {
	*Compliance
	Title    string
	Overall  []fleetRate
	Chart    chartView
	Hazards  []hazardView
	Waived   int
	Notices  []string
	Findings int
	Changes  *changesView
	// ControlOpen says per failing control (fleet NUL rule) how long its
	// oldest open finding has been open.
	ControlOpen map[string]string
}

// changesView is the "changed since the previous run" section.
type changesView struct {
	Previous              string
	Summary               string
	Caveats               []string
	New, Resolved         []changeGroup
	MoreNew, MoreResolved int
	Facts                 []factGroup
	MoreFacts             int
	Added, Gone           []string
}

func newChangesView(c *Changes) *changesView {
	if c == nil {
		return nil
	}
	v := &changesView{Previous: previousLabel(c.Previous), Summary: c.summary(), Caveats: c.caveats(),
		New: changeGroups(c.New), Resolved: changeGroups(c.Resolved), Facts: factGroups(c.Facts),
		Added: hostLines(c.Added), Gone: hostLines(c.Gone)}
	v.New, v.MoreNew = capRows(v.New, changeFindingRows)
	v.Resolved, v.MoreResolved = capRows(v.Resolved, changeFindingRows)
	v.Facts, v.MoreFacts = capRows(v.Facts, changeFactRows)
	return v
}

// capRows keeps the first n rows and says how many it left out.
func capRows[T any](rows []T, n int) ([]T, int) {
	if len(rows) <= n {
		return rows, 0
	}
	return rows[:n], len(rows) - n
}

type fleetRate struct {
	Fleet    string
	Hosts    int
	Audited  int
	Controls int
	// Passing are the controls checked on some host and failing on none;
	// NotChecked those no host was checked on.
	Passing    int
	NotChecked int
	Rate       float64
}

type hazardView struct {
	Rule, Title, Severity, Fleet string
	Hosts                        int
	HostList                     string
	Values                       []string
	Sources                      []string
	Remediation                  string
	// OpenFor is how long the group's oldest finding has been open.
	OpenFor string
	// Mix are the severities behind Severity ("" when all one).
	Mix string
}

// RenderHTML writes the compliance report for c.
func RenderHTML(w io.Writer, c *Compliance) error {
	v := htmlView{Compliance: c, Title: cmp.Or(c.Title, "fleetaudit compliance report")}
	for _, fc := range c.Fleets {
		fr := fleetRate{Fleet: fc.Fleet, Hosts: fc.Hosts, Audited: fc.Audited, Controls: len(fc.Controls)}
		checks, failing := 0, 0
		for _, ctl := range fc.Controls {
			checks += ctl.Checked
			failing += ctl.Failing
			switch {
			case ctl.Checked == 0:
				fr.NotChecked++
			case ctl.Failing == 0:
				fr.Passing++
			}
		}
		fr.Rate = TrendPoint{Checks: checks, Failing: failing}.PassRate()
		v.Overall = append(v.Overall, fr)
	}
	for _, f := range c.Findings {
		if f.Waived != nil {
			v.Waived++
		} else {
			v.Findings++
		}
	}
	v.Chart = trendChart(c.Trend)
	v.Hazards = topHazards(c.Findings, 10, c.Seen, c.Run)
	if c.Seen != nil {
		oldest := map[string]FirstSeen{}
		for i := range c.Findings {
			f := &c.Findings[i]
			fs, ok := c.Seen[SeenKey(f)]
			if !ok || f.Waived != nil {
				continue
			}
			k := f.Fleet + "\x00" + f.Rule
			if old, ok := oldest[k]; !ok || fs.At.Before(old.At) || fs.At.Equal(old.At) && fs.AtLeast {
				oldest[k] = fs
			}
		}
		v.ControlOpen = map[string]string{}
		for k, fs := range oldest {
			v.ControlOpen[k] = openForGroup(fs, c.Run)
		}
	}
	if !c.Gate {
		v.Changes = newChangesView(c.Changes)
	}
	v.Notices = waiverNotices(c.Waivers)
	var buf bytes.Buffer
	if err := htmlTmpl.Execute(&buf, v); err != nil {
		return err
	}
	// Control and bidi characters from hosts are shown as escapes: the
	// browser would hide them, a terminal showing the file would obey them.
	_, err := io.WriteString(w, EscapeText(buf.String()))
	return err
}

// topHazards are the worst unwaived rule × fleet groups: most severe, then
// most hosts.
func topHazards(findings []policies.Finding, n int, seen Seen, run RunInfo) []hazardView {
	type key struct{ fleet, rule string }
	groups := map[key]*ruleGroup{}
	members := map[key][]*policies.Finding{}
	var order []key
	remediation := map[key]string{}
	for i := range findings {
		f := &findings[i]
		if f.Waived == nil && f.Rule != "collection-error" {
			k := key{f.Fleet, f.Rule}
			g := groups[k]
			if g == nil {
				g = &ruleGroup{}
				groups[k] = g
				order = append(order, k)
				remediation[k] = f.Remediation
			}
			g.add(f, nil)
			if seen != nil {
				members[k] = append(members[k], f)
			}
		}
	}
	var out []hazardView
	for _, k := range order {
		g := groups[k]
		h := hazardView{Rule: k.rule, Title: g.Title, Severity: g.Severity, Fleet: k.fleet, Hosts: g.Hosts.Len(),
			HostList: g.Hosts.fold(8), Values: valuesLines(g.factValues(), 4, 4), Remediation: remediation[k], Mix: mixLine(g.Open)}
		if fs, ok := seen.oldest(members[k]); ok {
			h.OpenFor = openForGroup(fs, run)
		}
		srcs := g.sourceCounts()
		for i, s := range srcs {
			if i == 4 {
				h.Sources = append(h.Sources, fmt.Sprintf("and %d more", len(srcs)-4))
				break
			}
			h.Sources = append(h.Sources, fmt.Sprintf("%s (%d)", s.Value, s.Count))
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b hazardView) int {
		return cmp.Or(-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
			-cmp.Compare(a.Hosts, b.Hosts), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Fleet, b.Fleet))
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// chartView is the trend chart, laid out in Go so the template only
// writes coordinates.
type chartView struct {
	Width, Height                 int
	Left, Right, Top, Bottom      int
	PlotRight                     int
	LegendX, LegendX2, LegendText int
	Series                        []chartSeries
	XLabels, YLabels              []chartLabel
	Runs                          int
	Summary                       string
}

type chartSeries struct {
	Fleet   string
	Color   string
	Dash    string
	Points  string
	Dots    []chartDot
	LegendY int
	Last    string
}

type chartDot struct {
	X, Y  string
	Title string
}

type chartLabel struct {
	X, Y string
	Text string
}

// palette pairs colours with dash patterns so lines stay apart in
// grey print.
var palette = []struct{ color, dash string }{
	{"#1f5fa8", ""}, {"#c0392b", "6 3"}, {"#2e8540", "2 3"}, {"#8e44ad", "8 3 2 3"},
	{"#d35400", "4 4"}, {"#16a085", "1 2"}, {"#7f6000", "10 4"}, {"#555555", "3 2 1 2"},
}

// chartRun is one run on the trend chart.
type chartRun struct {
	id string
	at time.Time
}

// trendChart plots each fleet's pass rate over the runs, oldest left. The
// x axis is the run order (runs are not evenly spaced in time; the labels
// give the dates).
func trendChart(points []TrendPoint) chartView {
	cv := chartView{Width: 720, Height: 260, Left: 48, Right: 170, Top: 16, Bottom: 40}
	var runs []chartRun
	for _, p := range points {
		k := chartRun{p.Run, p.At}
		if !slices.Contains(runs, k) {
			runs = append(runs, k)
		}
	}
	slices.SortStableFunc(runs, func(a, b chartRun) int { return a.at.Compare(b.at) })
	cv.Runs = len(runs)
	fleets := map[string]bool{}
	for _, p := range points {
		fleets[p.Fleet] = true
	}
	cv.Height = max(cv.Height, cv.Top+cv.Bottom+18*len(fleets)+8)
	cv.PlotRight = cv.Width - cv.Right
	cv.LegendX, cv.LegendX2, cv.LegendText = cv.PlotRight+16, cv.PlotRight+40, cv.PlotRight+46
	plotW := float64(cv.Width - cv.Left - cv.Right)
	plotH := float64(cv.Height - cv.Top - cv.Bottom)
	x := func(i int) float64 {
		if len(runs) <= 1 {
			return float64(cv.Left) + plotW/2
		}
		return float64(cv.Left) + plotW*float64(i)/float64(len(runs)-1)
	}
	y := func(rate float64) float64 { return float64(cv.Top) + plotH*(1-rate) }
	for _, pct := range []float64{0, 0.25, 0.5, 0.75, 1} {
		cv.YLabels = append(cv.YLabels, chartLabel{X: fmt.Sprint(cv.Left - 6), Y: fmt.Sprintf("%.1f", y(pct)), Text: fmt.Sprintf("%.0f%%", pct*100)})
	}
	step := max(1, len(runs)/6)
	labels := runLabels(runs)
	for i := range runs {
		if i%step != 0 && i != len(runs)-1 {
			continue
		}
		label := labels[i]
		cv.XLabels = append(cv.XLabels, chartLabel{X: fmt.Sprintf("%.1f", x(i)), Y: fmt.Sprint(cv.Height - cv.Bottom + 18), Text: label})
	}
	byFleet := map[string]map[int]TrendPoint{}
	for _, p := range points {
		i := slices.Index(runs, chartRun{p.Run, p.At})
		if byFleet[p.Fleet] == nil {
			byFleet[p.Fleet] = map[int]TrendPoint{}
		}
		byFleet[p.Fleet][i] = p
	}
	for n, fleet := range slices.Sorted(maps.Keys(byFleet)) {
		pal := palette[n%len(palette)]
		s := chartSeries{Fleet: fleetLabel(fleet), Color: pal.color, Dash: pal.dash, LegendY: cv.Top + 8 + n*18}
		var pts []string
		for _, i := range slices.Sorted(maps.Keys(byFleet[fleet])) {
			p := byFleet[fleet][i]
			px, py := fmt.Sprintf("%.1f", x(i)), fmt.Sprintf("%.1f", y(p.PassRate()))
			pts = append(pts, px+","+py)
			title := fmt.Sprintf("%s %s: %.1f%% of %d checks pass", fleetLabel(fleet), cmp.Or(p.Run, p.At.UTC().Format(time.DateTime)), p.PassRate()*100, p.Checks)
			if p.Incomplete {
				title += " (incomplete run)"
			}
			s.Dots = append(s.Dots, chartDot{X: px, Y: py, Title: title})
			s.Last = fmt.Sprintf("%.0f%%", math.Floor(p.PassRate()*100))
		}
		s.Points = strings.Join(pts, " ")
		cv.Series = append(cv.Series, s)
	}
	if len(runs) <= 1 {
		cv.Summary = "Only this run: record runs with audit --record to see the trend."
	} else {
		cv.Summary = fmt.Sprintf("Pass rate of each fleet's checks over %d recorded runs.", len(runs))
	}
	return cv
}

// runLabels names each run on the chart's x axis by its time to the
// minute; runs that would share a label get the seconds, then their ids,
// so no label stands for two runs.
func runLabels(runs []chartRun) []string {
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = r.at.UTC().Format("01-02 15:04")
		if r.at.IsZero() {
			labels[i] = cmp.Or(r.id, "this run")
		}
	}
	for _, more := range []func(r chartRun) string{
		func(r chartRun) string {
			if r.at.IsZero() {
				return ""
			}
			return r.at.UTC().Format(":05")
		},
		func(r chartRun) string {
			if r.id == "" {
				return ""
			}
			return " #" + r.id
		},
	} {
		n := map[string]int{}
		for _, l := range labels {
			n[l]++
		}
		for i, r := range runs {
			if n[labels[i]] > 1 {
				labels[i] += more(r)
			}
		}
	}
	return labels
}

// openForGroup says how long a group's oldest finding has been open:
// "open 23 days, since run 3 (2026-11-14 02:00 UTC)", or "new in this run".
func openForGroup(fs FirstSeen, run RunInfo) string {
	text := fs.text(run)
	if text == "new" {
		return "new in this run"
	}
	since := ", since " + previousLabel(RunInfo{ID: fs.Run, At: fs.At})
	if fs.AtLeast {
		since += ", the oldest run read"
	}
	return text + since
}
