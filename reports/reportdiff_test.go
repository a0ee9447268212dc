package reports

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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
