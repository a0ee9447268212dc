package reports

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

// The Markdown title and its fleet table count alike: the title's open
// findings by severity are the table's columns summed, the waived apart.
func TestMarkdownTitleCountsWaivedAsTheTable(t *testing.T) {
	res, _ := exampleAudit(t)
	var out bytes.Buffer
	if err := (markdownFormat{}).Render(&out, res, Options{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	title, _, _ := strings.Cut(text, "\n")
	m := regexp.MustCompile(`^### fleetaudit audit: (\d+) open findings \(([^)]*)\), (\d+) waived$`).FindStringSubmatch(title)
	if m == nil {
		t.Fatalf("title %q: want N open findings (by severity), W waived", title)
	}
	titleSev := map[string]int{}
	for _, part := range strings.Split(m[2], ", ") {
		n, sev, _ := strings.Cut(part, " ")
		titleSev[sev], _ = strconv.Atoi(n)
	}
	cols := []string{"critical", "high", "medium", "low", "info", "waived"}
	table := map[string]int{}
	rows := regexp.MustCompile(`(?m)^\| [^|]+ \| \d+ \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$`).FindAllStringSubmatch(text, -1)
	if len(rows) != 2 {
		t.Fatalf("%d fleet rows, want 2:\n%s", len(rows), text)
	}
	for _, row := range rows {
		for i, c := range cols {
			n, _ := strconv.Atoi(row[i+1])
			table[c] += n
		}
	}
	open := 0
	for _, c := range cols[:5] {
		open += table[c]
		if titleSev[c] != table[c] {
			t.Errorf("%s: title %d, table %d", c, titleSev[c], table[c])
		}
	}
	if strconv.Itoa(open) != m[1] || strconv.Itoa(table["waived"]) != m[3] {
		t.Errorf("title %q: the table has %d open and %d waived", title, open, table["waived"])
	}
	if table["waived"] == 0 {
		t.Fatal("the example has no waived finding: the test needs one")
	}
}

// Runs recorded in the same minute get distinct labels on the trend
// chart: the seconds, then the run's id when those agree too.
func TestReportTrendLabelsRunsOfOneMinuteApart(t *testing.T) {
	res, cat := exampleAudit(t)
	at := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	var prior []TrendPoint
	for _, p := range []struct {
		run string
		at  time.Time
	}{{"6", at.Add(-time.Hour)}, {"7", at}, {"8", at.Add(35 * time.Second)}} {
		prior = append(prior, TrendPoint{Run: p.run, At: p.at, Fleet: "gpu-training", Checks: 10, Failing: 1})
	}
	var out bytes.Buffer
	opts := Options{Catalog: cat, Run: RunInfo{ID: "9", At: at.Add(35 * time.Second)}, Trend: prior}
	if err := (htmlFormat{}).Render(&out, res, opts); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`<text x="[0-9.]+" y="[0-9.]+" text-anchor="middle">([^<]*)</text>`).FindAllStringSubmatch(out.String(), -1) {
		got = append(got, m[1])
	}
	want := []string{"12-01 09:00", "12-01 10:00:05", "12-01 10:00:40 #8", "12-01 10:00:40 #9"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("x labels %q, want %q", got, want)
	}
}

// goldenChanges are what a store would say changed since run-3 in the
// example fleet: web-serving's THP findings new, a NUMA finding resolved
// on two hosts, the facts behind them, a host added and one gone.
func goldenChanges(res *audit.Result) *Changes {
	c := &Changes{Previous: RunInfo{ID: "run-3", At: goldenNow.AddDate(0, 0, -1)}, Unknown: 2, Unread: 1}
	for _, f := range res.Findings {
		if f.Rule == "thp-always" {
			c.New = append(c.New, f)
		}
	}
	for _, h := range []string{"gpu-a-009", "gpu-a-010"} {
		c.Resolved = append(c.Resolved, policies.Finding{Rule: "numa-balancing-enabled", Title: "Automatic NUMA balancing on a training host", Severity: "low", Fleet: "gpu-training", Host: h})
		c.Facts = append(c.Facts, FactChange{Host: h, Fleet: "gpu-training", Fact: "sysctl.running.kernel.numa_balancing", Change: "changed", Before: "1", After: "0", Source: "/proc/sys/kernel/numa_balancing"})
	}
	for _, h := range []string{"web-01", "web-02", "web-03", "web-04"} {
		c.Facts = append(c.Facts, FactChange{Host: h, Fleet: "web-serving", Fact: "thp.enabled", Change: "changed", Before: "madvise", After: "always", Source: "/etc/rc.local:4"})
	}
	c.Facts = append(c.Facts, FactChange{Host: "web-02", Fleet: "web-serving", Fact: "sysctl.configured.net.ipv4.tcp_tw_recycle", Change: "added", After: "1", Source: "/etc/sysctl.d/99-legacy.conf:2"})
	c.Added = []HostRef{{"gpu-k-001", "gpu-training"}}
	c.Gone = []HostRef{{"gpu-a-009", "gpu-training"}, {"gpu-a-010", "gpu-training"}}
	return c
}

// goldenSeen has the example's findings open since run-1, three days
// back, but for the new ones (THP, fabric manager) and gpu-a-004's, seen
// since the first run read.
func goldenSeen(res *audit.Result) Seen {
	seen := Seen{}
	for i := range res.Findings {
		f := &res.Findings[i]
		fs := FirstSeen{Run: "run-1", At: goldenNow.AddDate(0, 0, -3)}
		switch {
		case f.Rule == "thp-always" || f.Rule == "fabric-manager-mismatch":
			fs = FirstSeen{Run: "run-4", At: goldenNow}
		case f.Host == "gpu-a-004":
			fs.AtLeast = true
		}
		seen[SeenKey(f)] = fs
	}
	return seen
}

// The compliance report of a recorded run: the example audit with what
// changed since the previous run and how long each finding has been open.
func TestReportGolden(t *testing.T) {
	res, cat := exampleAudit(t)
	for _, c := range []struct{ file, format, group string }{
		{"report.html", "html", ""},
		{"report.md", "markdown", ""},
		{"report-by-rule.md", "markdown", GroupRule},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := Get(c.format)
			if err != nil {
				t.Fatal(err)
			}
			opts := goldenOptions(cat)
			opts.GroupBy = c.group
			opts.Changes, opts.Seen = goldenChanges(res), goldenSeen(res)
			var out bytes.Buffer
			if err := r.Render(&out, res, opts); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.file, out.Bytes())
		})
	}
}

// TestReportChangesInChromium opens the report of a recorded run in
// headless Chromium: the DOM it builds has the changes since the previous
// run and, per top hazard, how long it has been open.
func TestReportChangesInChromium(t *testing.T) {
	bin := chromium(t)
	res, cat := exampleAudit(t)
	opts := goldenOptions(cat)
	opts.Changes, opts.Seen = goldenChanges(res), goldenSeen(res)
	var out bytes.Buffer
	if err := (htmlFormat{}).Render(&out, res, opts); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, bin, "--dump-dom", "file://"+file))
	count := func(pattern string) int { return len(regexp.MustCompile(pattern).FindAllString(dom, -1)) }
	for _, c := range []struct {
		what, pattern string
		want          int
	}{
		{"the section", `<section id="changes">`, 1},
		{"its summary", `Compared with run run-3 \(2026-05-31 12:00 UTC\): 4 new findings, 2 resolved, 7 facts changed on 6 hosts, 1 host added, 2 gone\.`, 1},
		{"new THP findings, one row for 4 hosts", `<tr class="change-new" data-rule="thp-always" data-fleet="web-serving" data-hosts="4">.*?web-\[01-04\]`, 1},
		{"resolved NUMA findings", `<tr class="change-resolved" data-rule="numa-balancing-enabled" data-fleet="gpu-training" data-hosts="2">`, 1},
		{"facts changed, grouped", `<tr class="change-fact" `, 3},
		{"the file that changed THP", `<tr class="change-fact" data-fact="thp.enabled" data-hosts="4"><td><code>thp.enabled</code></td><td class="mono">madvise → always</td><td class="mono">/etc/rc.local:4</td>`, 1},
		{"host added", `<li class="mono change-added">gpu-training: gpu-k-001</li>`, 1},
		{"hosts gone", `<li class="mono change-gone">gpu-training: gpu-a-\[009-010\]</li>`, 1},
		{"caveats", `<p class="notice">\d+ (findings?|hosts?) `, 2},
		{"a hazard open since the first run read", `<div class="hazard" data-rule="hugetlb-cma-on-gpu" data-fleet="gpu-training">(?s:.{0,800}?)<div class="open-for">open 3 days or more, since run run-1 \(2026-05-29 12:00 UTC\), the oldest run read</div>`, 1},
		{"a hazard open three days", `<div class="hazard" data-rule="driver-version-skew" data-fleet="gpu-training">(?s:.{0,800}?)<div class="open-for">open 3 days, since run run-1`, 1},
		{"a failing control, open three days", `<tr class="control" data-rule="driver-version-skew" data-failing="3" data-checked="10"><td><code>driver-version-skew</code><br>NVIDIA driver versions differ across the fleet<br><span class="open-for">open 3 days, since run run-1 \(2026-05-29 12:00 UTC\)</span></td>`, 1},
		{"a passing control says nothing", `<tr class="control" data-rule="[^"]*" data-failing="0"[^>]*><td>(?:[^<]|<br>|<code>|</code>)*<span class="open-for">`, 0},
		{"a new hazard", `<div class="hazard" data-rule="fabric-manager-mismatch" data-fleet="gpu-training">(?s:.{0,800}?)<div class="open-for">new in this run</div>`, 1},
	} {
		if got := count(c.pattern); got != c.want {
			t.Errorf("%s: %d matches of %s, want %d", c.what, got, c.pattern, c.want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
	if shot := os.Getenv("FLEETAUDIT_SCREENSHOT"); shot != "" {
		runChromium(t, bin, "--hide-scrollbars", "--window-size=1200,2400", "--screenshot="+shot, "file://"+file)
	}
}

// mixedFleet is a 10-host fleet where one rule fires critical on one
// host and high on nine.
func mixedFleet() *audit.Result {
	res := &audit.Result{Summary: audit.Summary{Hosts: 10, Audited: 10, Fleets: map[string]audit.FleetSummary{"train": {Hosts: 10}}}}
	for i := 1; i <= 10; i++ {
		host := fmt.Sprintf("gpu-%02d", i)
		sev := "high"
		if i == 7 {
			sev = "critical"
		}
		res.Hosts = append(res.Hosts, fleetrun.HostRun{Host: host, Fleet: "train"})
		res.Findings = append(res.Findings, policies.Finding{Rule: "peer-race", Title: "Peer memory race", Severity: sev, Fleet: "train", Host: host, Message: "racy driver"})
	}
	// A waived critical finding of another rule labels nothing while the
	// rule has open ones.
	res.Findings = append(res.Findings,
		policies.Finding{Rule: "cma", Title: "CMA area", Severity: "critical", Fleet: "train", Host: "gpu-01", Message: "cma", Waived: &policies.Waived{Owner: "alice", Expires: "2099-01-01"}},
		policies.Finding{Rule: "cma", Title: "CMA area", Severity: "medium", Fleet: "train", Host: "gpu-02", Message: "cma"})
	res.Summary.Findings = len(res.Findings)
	return res
}

// A group's severity label is the highest of its open findings, with the
// mix shown: one critical and nine high are "critical", "1 critical, 9
// high", in every grouped view.
func TestReportGroupSeverityShowsTheMix(t *testing.T) {
	render := func(format, group string) string {
		t.Helper()
		r, err := Get(format)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := r.Render(&out, mixedFleet(), Options{GroupBy: group, Width: 120, Run: RunInfo{At: goldenNow}}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	md := render("markdown", GroupRule)
	for _, want := range []string{"| critical<br>1 critical, 9 high | `peer-race`", "| medium (1 waived) | `cma`"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown by rule lacks %q:\n%s", want, md)
		}
	}
	table := render("table", GroupRule)
	if !regexp.MustCompile(`(?m)^ critical +10: gpu-\[01-10\] +peer-race: Peer memory race\n +1 critical, 9 high$`).MatchString(table) {
		t.Errorf("table by rule: no critical peer-race row with its mix:\n%s", table)
	}
	if !regexp.MustCompile(`(?m)^ medium +2: gpu-\[01-02\] +cma: CMA area\n +1 of 2 waived$`).MatchString(table) {
		t.Errorf("table by rule: the cma group is not labelled by its open finding:\n%s", table)
	}
	html := render("html", "")
	for _, want := range []string{
		`<span class="sev sev-critical">critical</span> <code>peer-race</code> Peer memory race — train, 10 hosts <span class="sev-mix">(1 critical, 9 high)</span>`,
		`<span class="sev sev-critical">critical</span><br><span class="sev-mix">1 critical, 9 high</span></td><td class="num">10</td><td class="num">10</td>`,
		`<tr class="control" data-rule="cma" data-failing="1" data-checked="10"><td><code>cma</code><br>CMA area</td><td><span class="sev sev-medium">medium</span></td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
}
