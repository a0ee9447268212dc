package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mattn/go-runewidth"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/configrepo"
	"github.com/fleetaudit/fleetaudit/policies"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want, text string }{
		{"gpu-a-001", "gpu-a-001", "gpu-a-001"},
		{"\x1b]0;pwn\x07", `\x1b]0;pwn\x07`, `\x1b]0;pwn\x07`},
		{"\x1b[2Jclear", `\x1b[2Jclear`, `\x1b[2Jclear`},
		{"a\nb\tc\r", `a\x0ab\x09c\x0d`, "a\nb\\x09c\\x0d"},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`, `csi\u009b31m`},
		{"raw \x9b byte", `raw \x9b byte`, `raw \x9b byte`},
		{"evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`},
		{"naïve 日本", "naïve 日本", "naïve 日本"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := EscapeText(tt.in); got != tt.text {
				t.Errorf("EscapeText(%q) = %q, want %q", tt.in, got, tt.text)
			}
			if got := Escape(Escape(tt.in)); got != tt.want {
				t.Errorf("Escape is not idempotent on %q: %q", tt.in, got)
			}
		})
	}
}

func TestWrapNeverDropsACharacter(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		width int
		want  []string
	}{
		{"words", "the quick brown fox jumps", 10, []string{"the quick", "brown fox", "jumps"}},
		{"path breaks at a slash", "at /usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3:3", 20,
			[]string{"at /usr/lib/", "x86_64-linux-gnu/", "libnccl.so.2.18.3:3"}},
		{"short room left", "some words here /usr/lib/x86_64-linux-gnu", 20,
			[]string{"some words here", "/usr/lib/", "x86_64-linux-gnu"}},
		{"no separator", strings.Repeat("x", 25), 10, []string{"xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"}},
		{"newlines kept", "one\n\ntwo", 10, []string{"one", "", "two"}},
		{"wide runes", "日本語のホスト名", 6, []string{"日本語", "のホス", "ト名"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Wrap(tt.text, tt.width)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Wrap(%q, %d) (-want +got):\n%s", tt.text, tt.width, diff)
			}
			for _, l := range got {
				if w := runewidth.StringWidth(l); w > tt.width {
					t.Errorf("line %q is %d wide, over %d", l, w, tt.width)
				}
			}
			if strings.Join(strings.Fields(strings.Join(got, "")), "") != strings.Join(strings.Fields(tt.text), "") {
				t.Errorf("characters lost: %q from %q", got, tt.text)
			}
		})
	}
}

func longResult() *audit.Result {
	res := sampleResult()
	host := "gpu-" + strings.Repeat("rack17-", 6) + "node-042.training.example.com"
	lib := "/opt/conda/envs/train/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2:3"
	res.Findings = append(res.Findings, policies.Finding{
		Rule: "nccl-version-skew", Severity: "high", Host: host, Fleet: "gpu-training",
		Message:  "NCCL 2.18.3 differs from the fleet's 2.21.5",
		Evidence: []policies.Evidence{{Fact: "libraries.nccl", Value: "2.18.3", Source: lib}},
	})
	return res
}

// TestTableWrapsInsteadOfCutting: a library path lost its ":3" and a host
// name was cut at 24 characters.
func TestTableWrapsInsteadOfCutting(t *testing.T) {
	res := longResult()
	r, _ := Get("table")
	for _, width := range []int{60, 80, 120} {
		var out bytes.Buffer
		if err := r.Render(&out, res, Options{Width: width}); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		host, finding := rowColumns(text, "high")
		if want := res.Findings[1].Host; host != want {
			t.Errorf("width %d: host column holds %q, want %q:\n%s", width, host, want, text)
		}
		if want := "at" + res.Findings[1].Evidence[0].Source; !strings.HasSuffix(finding, want) {
			t.Errorf("width %d: finding column ends %q, want %q:\n%s", width, finding, want, text)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "== ") || !strings.HasPrefix(line, " ") {
				continue // headings and summaries are not table rows
			}
			if w := runewidth.StringWidth(line); w > width {
				t.Errorf("width %d: row line is %d wide: %q", width, w, line)
			}
		}
	}
}

// rowColumns joins, without spaces, the HOST and FINDING columns of the
// table row whose severity is sev.
func rowColumns(table, sev string) (host, finding string) {
	lines := strings.Split(table, "\n")
	hostAt, findingAt, in := 0, 0, false
	for _, line := range lines {
		if h := strings.Index(line, "HOST"); h > 0 {
			hostAt, findingAt = h, strings.Index(line, "FINDING")
			continue
		}
		switch {
		case strings.HasPrefix(line, " "+sev+" "):
			in = true
		case in && (len(line) <= hostAt || strings.TrimSpace(line[:hostAt]) != ""):
			return host, finding
		}
		if in {
			host += strings.TrimSpace(line[hostAt:min(findingAt, len(line))])
			if len(line) > findingAt {
				finding += strings.ReplaceAll(line[findingAt:], " ", "")
			}
		}
	}
	return host, finding
}

// hostile is what a host or repo can put in a value: a window title, a
// screen clear, a C1 CSI and a line separator.
const hostile = "x\x1b]0;pwn\x07\x1b[2J\u009b31m\u2028y"

func assertNoRawControls(t *testing.T, format, out string, color bool) {
	t.Helper()
	if color {
		for _, code := range severityColor {
			out = strings.ReplaceAll(out, code, "")
		}
		out = strings.ReplaceAll(out, "\x1b[0m", "")
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 {
			t.Errorf("%s output holds raw %U:\n%q", format, r, out)
			return
		}
	}
	if !strings.Contains(out, `x\x1b]0;pwn\x07\x1b[2J\u009b31m\u2028y`) {
		t.Errorf("%s output does not show the escaped value:\n%s", format, out)
	}
}

func TestTableEscapesControlCharacters(t *testing.T) {
	res := sampleResult()
	f := &res.Findings[0]
	f.Host, f.Message = hostile, "msg "+hostile
	f.Evidence[1].Source = "/etc/default/grub.d/" + hostile + ".cfg:3"
	res.Errors = append(res.Errors, audit.HostError{Host: hostile, Error: "read " + hostile})
	res.Summary.Fleets[hostile] = audit.FleetSummary{Hosts: 1}
	r, _ := Get("table")
	for _, color := range []bool{false, true} {
		var out bytes.Buffer
		if err := r.Render(&out, res, Options{Width: 400, Color: color}); err != nil {
			t.Fatal(err)
		}
		assertNoRawControls(t, "table", out.String(), color)
	}
}

func hostileGate() *configrepo.Result {
	hosts := 3
	f := policies.Finding{Rule: "hugetlb-cma-on-gpu", Severity: "critical", Fleet: hostile, Message: "msg " + hostile,
		Evidence: []policies.Evidence{{Fact: "boot.configured.params.hugetlb_cma", Source: "layers/" + hostile + ":2"}}}
	return &configrepo.Result{
		Base: configrepo.RefInfo{Ref: "main" + hostile, Commit: "0123456789abcdef"},
		Head: configrepo.RefInfo{Ref: "work tree", Commit: "fedcba9876543210"},
		Fleets: []configrepo.FleetResult{{
			Fleet: hostile, Profile: "p" + hostile, Status: "changed", Hosts: &hosts,
			Changed: []string{"layers/" + hostile}, Introduced: []policies.Finding{f}, Unchanged: []policies.Finding{f},
		}},
		Warnings: []string{"warn " + hostile},
		Errors:   []configrepo.FleetError{{Fleet: hostile, Ref: "head", Error: "err " + hostile}},
		Summary: configrepo.Summary{Introduced: 1, IntroducedBySeverity: map[string]int{"critical": 1},
			FleetsAffected: []string{hostile}},
	}
}

func TestGateReportsEscapeControlCharacters(t *testing.T) {
	for _, format := range []string{"table", "markdown"} {
		t.Run(format, func(t *testing.T) {
			r, err := GetGate(format)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := r.RenderGate(&out, hostileGate(), Options{Width: 400}); err != nil {
				t.Fatal(err)
			}
			assertNoRawControls(t, format, out.String(), false)
		})
	}
}

func TestColumnsKeepMinWidthsAndWrapTheRest(t *testing.T) {
	tests := []struct {
		name  string
		width int
		want  string
	}{
		{"the id keeps its width", 62, "" +
			"ID                             TITLE\n" +
			"a-rather-long-rule-identifier  a title that has to wrap over\n" +
			"                               lines\n"},
		{"narrow: the last column keeps 30", 40, "" +
			"ID        TITLE\n" +
			"a-rather  a title that has to wrap over\n" +
			"-long-    lines\n" +
			"rule-\n" +
			"identifi\n" +
			"er\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			c := Columns{
				Header:    []string{"ID", "TITLE"},
				Rows:      [][]string{{"a-rather-long-rule-identifier", "a title that has to wrap over lines"}},
				Width:     tt.width,
				MinWidths: []int{100},
			}
			if err := c.Write(&out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestJSONEscapesEveryControlCharacter: encoding/json leaves DEL and C1
// (U+009B is CSI to some terminals) raw; the documents escape them and
// still decode to the same strings.
func TestJSONEscapesEveryControlCharacter(t *testing.T) {
	value := "a\x7fb\u009b31mc\x1b[2J"
	res := sampleResult()
	res.Findings[0].Host = value
	gate := hostileGate()
	gate.Fleets[0].Fleet = value
	r, _ := Get("json")
	g, _ := GetGate("json")
	var findings, gated bytes.Buffer
	if err := r.Render(&findings, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := g.RenderGate(&gated, gate, Options{}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]byte{"findings": findings.Bytes(), "gate": gated.Bytes()} {
		for _, r := range string(out) {
			if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Errorf("%s JSON holds raw %U", name, r)
			}
		}
		if !bytes.Contains(out, []byte(`a\u007fb\u009b31mc\u001b[2J`)) {
			t.Errorf("%s JSON lacks the escaped value:\n%s", name, out)
		}
	}
	var doc struct {
		Findings []policies.Finding `json:"findings"`
	}
	if err := json.Unmarshal(findings.Bytes(), &doc); err != nil || doc.Findings[0].Host != value {
		t.Errorf("findings JSON does not decode to the host name: %v %+v", err, doc.Findings)
	}
}

// TestColourOnlyOnTheSeverityColumn: a wrapped message line starting with
// a severity word was coloured as if it began a row.
func TestColourOnlyOnTheSeverityColumn(t *testing.T) {
	res := sampleResult()
	res.Findings[0].Message = strings.Repeat("low ", 60)
	r, _ := Get("table")
	var out bytes.Buffer
	if err := r.Render(&out, res, Options{Width: 60, Color: true}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\x1b[0m"); n != 1 {
		t.Errorf("%d coloured words, want the one severity:\n%s", n, out.String())
	}
}
