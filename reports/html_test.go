package reports

import (
	"bytes"
	"context"
	"fmt"
	"github.com/fleetaudit/fleetaudit/internal/testpeer"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/audit"
)

// chromium finds Debian's chromium (or $CHROMIUM). Under CI=true a missing
// browser fails the test: .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return testpeer.Find(t, "chromium not found: apt-get install chromium (or set CHROMIUM) to check the HTML report in a real browser; .ci/run installs it",
		"chromium", "chromium-browser")
}

// runChromium runs headless Chromium with no network side channels (no
// component updates, sync or background fetches) on one file. The timeout
// only guards against a hung browser; nothing is asserted about time.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// complianceHTML writes the example fleet's report with three earlier
// runs in the trend, as a history store would hand them over.
func complianceHTML(t *testing.T) string {
	t.Helper()
	file, _ := complianceHTMLOf(t)
	return file
}

// complianceHTMLOf is complianceHTML and the audit it renders.
func complianceHTMLOf(t *testing.T) (string, *audit.Result) {
	t.Helper()
	res, cat := exampleAudit(t)
	var out bytes.Buffer
	if err := (htmlFormat{}).Render(&out, res, goldenOptions(cat)); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "compliance.html")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, res
}

// controlCounts counts a rule's control over one fleet from the findings
// themselves, not through NewCompliance: the hosts with an unwaived
// finding (failing), those whose findings are all waived, and the fleet's
// hosts (checked: every example host is read and runs every rule).
func controlCounts(res *audit.Result, fleet, rule string) (failing, waived, checked int) {
	bad := map[string]bool{}
	for _, f := range res.Findings {
		if f.Fleet == fleet && f.Rule == rule {
			bad[f.Host] = bad[f.Host] || f.Waived == nil
		}
	}
	for _, b := range bad {
		if b {
			failing++
		} else {
			waived++
		}
	}
	return failing, waived, res.Summary.Fleets[fleet].Hosts
}

// The report loads nothing: no src, href, url() or @import, and a CSP
// that forbids fetches in case a value ever slipped through.
func TestHTMLIsSelfContained(t *testing.T) {
	data, err := os.ReadFile(complianceHTML(t))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if m := regexp.MustCompile(`(?i)\s(src|href|srcset|action|poster)\s*=|url\(|@import|<script|<link|<iframe|<object|<img`).FindString(s); m != "" {
		t.Errorf("the report references an external resource: %q", m)
	}
	for _, want := range []string{`content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`, "@media print", "break-inside: avoid"} {
		if !strings.Contains(s, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}

// TestHTMLInChromium opens the report in real headless Chromium, checks
// the DOM the browser built (fleets, controls, chart, waivers, hazards),
// prints it to PDF and saves a screenshot. FLEETAUDIT_SCREENSHOT names
// where the screenshot goes (else a temp dir).
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	file, res := complianceHTMLOf(t)
	url := "file://" + file
	// The hugetlb control fails on some hosts and is waived on others.
	failing, waived, checked := controlCounts(res, "gpu-training", "hugetlb-cma-on-gpu")
	if failing == 0 || waived == 0 || failing+waived > checked {
		t.Fatalf("the example fleet's hugetlb-cma-on-gpu: %d failing, %d waived of %d hosts; the checks below need both", failing, waived, checked)
	}
	thpFailing, _, thpChecked := controlCounts(res, "web-serving", "thp-always")

	dom := string(runChromium(t, bin, "--dump-dom", url))
	count := func(pattern string) int { return len(regexp.MustCompile(pattern).FindAllString(dom, -1)) }
	checks := []struct {
		what    string
		pattern string
		want    int
	}{
		{"fleet sections", `<section class="fleet" data-fleet="(gpu-training|web-serving)">`, 2},
		{"fleet cards", `class="card fleet-card" data-fleet=`, 2},
		{fmt.Sprintf("gpu-training's failing hugetlb control (%d of %d, %d waived)", failing, checked, waived),
			fmt.Sprintf(`<tr class="control" data-rule="hugetlb-cma-on-gpu" data-failing="%d" data-checked="%d"><td>.*?</td><td>.*?</td><td class="num">%d</td><td class="num">%d</td><td class="num">%d</td>`, failing, checked, checked, failing, waived), 1},
		{"web-serving's thp control", fmt.Sprintf(`<tr class="control" data-rule="thp-always" data-failing="%d" data-checked="%d">`, thpFailing, thpChecked), 1},
		{"trend chart", `<svg id="trend-chart"`, 1},
		{"one line per fleet", `<polyline `, 2},
		{"a point per fleet per run (3 earlier + this one)", `<circle `, 8},
		{"legend entries", `<g class="legend">`, 2},
		{"active waiver", `<tr class="waiver" data-rule="hugetlb-cma-on-gpu" data-state="active">`, 1},
		{"expired waiver", `<tr class="waiver" data-rule="memlock-too-low" data-state="expired">`, 1},
		{"stale waivers", `<tr class="waiver" data-rule="[a-z-]+" data-state="stale">`, 2},
		{"top hazard", `<div class="hazard" data-rule="hugetlb-cma-on-gpu" data-fleet="gpu-training">`, 1},
		{"hazard provenance", `/etc/default/grub.d/60-hugetlb.cfg:3 \(5\)`, 1},
	}
	for _, c := range checks {
		if got := count(c.pattern); got != c.want {
			t.Errorf("%s: %d matches of %s in the DOM, want %d", c.what, got, c.pattern, c.want)
		}
	}
	if n := count(`<tr class="control" data-rule=`); n < 40 {
		t.Errorf("%d control rows, want every rule each fleet runs (at least 40)", n)
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	shot := os.Getenv("FLEETAUDIT_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "compliance.png")
	}
	runChromium(t, bin, "--hide-scrollbars", "--window-size=1200,1900", "--screenshot="+shot, url)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 20_000 {
		t.Errorf("screenshot %s: %d bytes, not a PNG of a rendered page", shot, len(png))
	}
	t.Logf("screenshot: %s", shot)

	pdf := filepath.Join(t.TempDir(), "compliance.pdf")
	runChromium(t, bin, "--no-pdf-header-footer", "--print-to-pdf="+pdf, url)
	data, err := os.ReadFile(pdf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("%PDF-")) || !bytes.Contains(data, []byte("/Type /Page")) {
		t.Errorf("printing the report gave no PDF page (%d bytes)", len(data))
	}
}
