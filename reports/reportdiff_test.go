package reports

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
