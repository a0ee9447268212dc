package reports

import (
	"fmt"
	"io"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
)

// largeResult is the example fleet's audit copied copies times under new
// host names (13 hosts each).
func largeResult(b *testing.B, copies int) (*audit.Result, *Catalog) {
	t := &testing.T{}
	res, cat := exampleAudit(t)
	if t.Failed() {
		b.Fatal("example audit failed")
	}
	big := *res
	big.Findings = nil
	big.Hosts = nil
	big.Summary.Fleets = map[string]audit.FleetSummary{}
	for i := range copies {
		for _, f := range res.Findings {
			f.Host = fmt.Sprintf("%s-%04d", f.Host, i)
			big.Findings = append(big.Findings, f)
		}
		for _, h := range res.Hosts {
			h.Host = fmt.Sprintf("%s-%04d", h.Host, i)
			big.Hosts = append(big.Hosts, h)
		}
	}
	for name, fs := range res.Summary.Fleets {
		big.Summary.Fleets[name] = audit.FleetSummary{Hosts: fs.Hosts * copies, BySeverity: fs.BySeverity}
	}
	big.Summary.Hosts, big.Summary.Audited = res.Summary.Hosts*copies, res.Summary.Audited*copies
	big.Summary.Findings = len(big.Findings)
	return &big, cat
}

// BenchmarkRender renders a 2,600-host audit (17,000 findings) in each
// format.
func BenchmarkRender(b *testing.B) {
	res, cat := largeResult(b, 200)
	b.Logf("%d hosts, %d findings", res.Summary.Hosts, len(res.Findings))
	for _, format := range Formats() {
		r, _ := Get(format)
		b.Run(format, func(b *testing.B) {
			for b.Loop() {
				if err := r.Render(io.Discard, res, Options{Catalog: cat, Width: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
