package reports

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
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

// fleetResult is the example fleet's audit repeated to hosts hosts, each
// named node-NNNNNN by its place in the repetition, with the findings in
// report order (fleet, most severe first, host, rule): a rule that fires on
// some of the example's hosts fires on tens of thousands of ranges of
// names, as on a generated fleet (bench/gen).
func fleetResult(b *testing.B, hosts int) (*audit.Result, *Catalog) {
	t := &testing.T{}
	res, cat := exampleAudit(t)
	if t.Failed() {
		b.Fatal("example audit failed")
	}
	index := map[string]int{}
	for i, h := range res.Hosts {
		index[h.Host] = i
	}
	per := len(res.Hosts)
	copies := (hosts + per - 1) / per
	big := *res
	big.Findings = make([]policies.Finding, 0, len(res.Findings)*copies)
	big.Hosts = make([]fleetrun.HostRun, 0, per*copies)
	names := make([]string, per*copies)
	for i := range names {
		names[i] = fmt.Sprintf("node-%06d", i)
	}
	for i := range copies {
		for _, f := range res.Findings {
			f.Host = names[i*per+index[f.Host]]
			big.Findings = append(big.Findings, f)
		}
		for j, h := range res.Hosts {
			h.Host = names[i*per+j]
			big.Hosts = append(big.Hosts, h)
		}
	}
	slices.SortStableFunc(big.Findings, func(a, b policies.Finding) int {
		return cmp.Or(cmp.Compare(a.Fleet, b.Fleet),
			-cmp.Compare(policies.SeverityRank(a.Severity), policies.SeverityRank(b.Severity)),
			cmp.Compare(a.Host, b.Host), cmp.Compare(a.Rule, b.Rule))
	})
	big.Summary.Fleets = map[string]audit.FleetSummary{}
	for name, fs := range res.Summary.Fleets {
		by := map[string]int{}
		for sev, n := range fs.BySeverity {
			by[sev] = n * copies
		}
		big.Summary.Fleets[name] = audit.FleetSummary{Hosts: fs.Hosts * copies, BySeverity: by}
	}
	big.Summary.Hosts, big.Summary.Audited = res.Summary.Hosts*copies, res.Summary.Audited*copies
	big.Summary.Findings = len(big.Findings)
	return &big, cat
}

// BenchmarkTable100k renders a 100,000-host audit (about 650,000 findings)
// as the grouped table and Markdown, as a terminal user would see it.
func BenchmarkTable100k(b *testing.B) {
	res, cat := fleetResult(b, 100_000)
	b.Logf("%d hosts, %d findings", res.Summary.Hosts, len(res.Findings))
	for _, format := range []string{"table", "markdown"} {
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
