package fleetrun

import (
	"context"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"

	"github.com/fleetaudit/fleetaudit/policies"
)

// BenchmarkRun1k audits 1,000 snapshot files of one fleet from disk: read,
// decode, host rules, projection, fleet-wide rules.
func BenchmarkRun1k(b *testing.B) {
	benchmarkRun(b, 1000)
}

func benchmarkRun(b *testing.B, n int) {
	hosts := make([]host, n)
	for i := range hosts {
		hosts[i] = testhost.Bench(i)
	}
	files := testhost.WriteSnapshots(b, b.TempDir(), hosts...)
	e := newEngine(b, policies.Options{Fleets: gpuFleets()})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Run(ctx, e, SnapshotFiles(files), RunOptions{FleetOf: fleetByLabel})
		if err != nil || len(rep.Failures) > 0 || len(rep.Findings) == 0 {
			b.Fatal(err, rep.Failures)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "hosts/s")
}
