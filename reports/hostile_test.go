package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// Host names, messages, values and waiver text come from hosts and repos:
// no format may let them break its syntax or reach a terminal raw.
func TestHostileContentStaysData(t *testing.T) {
	const evil = "<script>alert(1)</script>\x1b]0;owned\x07\"'`|\n]]>&amp;\u202e"
	res := sampleResult()
	f := &res.Findings[0]
	f.Host, f.Message, f.Title = "gpu-"+evil, "msg "+evil, "title "+evil
	f.Evidence[1].Value = evil
	f.Evidence[1].Source = "layers/" + evil + ":3"
	f.Waived = &policies.Waived{Owner: "o " + evil, Justification: "j " + evil, Expires: "2099-01-01", Source: "w.yaml:2"}
	res.Findings = append(res.Findings, *f)
	res.Findings[1].Fleet = "fleet " + evil
	res.Summary.Fleets["fleet "+evil] = audit.FleetSummary{Hosts: 1}
	res.Waivers = &waivers.Report{File: "w.yaml", Waivers: []waivers.Status{{Waiver: waivers.Waiver{Rule: "hugetlb-cma-on-gpu", Owner: "o " + evil, Justification: evil, Expires: "2099-01-01", Source: "w.yaml:2", Fleet: evil}, State: waivers.Stale}}}
	for _, format := range Formats() {
		for _, group := range []string{GroupNone, GroupRule, GroupHost} {
			r, _ := Get(format)
			var out bytes.Buffer
			if err := r.Render(&out, res, Options{GroupBy: group}); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			s := out.String()
			switch format {
			case "json", "sarif", "openreports":
				if !json.Valid(out.Bytes()) {
					t.Errorf("%s: not valid JSON", format)
				}
			case "junit":
				dec := xml.NewDecoder(&out)
				for {
					if _, err := dec.Token(); err == io.EOF {
						break
					} else if err != nil {
						t.Errorf("junit: not well-formed XML: %v", err)
						break
					}
				}
			case "prometheus":
				parser := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := parser.TextToMetricFamilies(strings.NewReader(s)); err != nil {
					t.Errorf("prometheus: %v", err)
				}
			case "html":
				if strings.Contains(s, "<script>") {
					t.Error("html: a host's <script> is markup")
				}
			case "markdown":
				// Inside a code span <script> is text; elsewhere it would be markup.
				noCode := stripCodeSpans(s)
				if i := strings.Index(noCode, "<script>"); i >= 0 {
					t.Errorf("markdown (group %s): a host's <script> is markup: %q", group, noCode[max(0, i-80):i+10])
				}
			}
			raw := "\x1b\x07\u202e"
			if format == "json" || format == "sarif" || format == "openreports" {
				raw = "\x1b\x07" // JSON escapes controls; bidi stays data, as in fleetaudit.findings/v1
			}
			if i := strings.IndexAny(s, raw); i >= 0 {
				t.Errorf("%s (group %s): raw control or bidi characters in the output: %q", format, group, s[max(0, i-60):min(len(s), i+10)])
			}
		}
	}
}

// stripCodeSpans removes Markdown code spans: a run of n backticks up to
// the next run of exactly n (CommonMark's rule).
func stripCodeSpans(s string) string {
	var b strings.Builder
	run := func(i int) int {
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(s); {
		if s[i] == '\\' && i+1 < len(s) {
			b.WriteString(s[i : i+2]) // an escaped backtick opens nothing
			i += 2
			continue
		}
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(s); {
			if s[j] == '`' {
				m := run(j)
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		i = end
	}
	return b.String()
}
