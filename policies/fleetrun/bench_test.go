package fleetrun

import (
	"context"
	"fmt"
	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"
	"testing"

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
		hosts[i] = benchHost(i)
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

// benchHost is a GPU node with a snapshot of realistic size (about 20 KB:
// a few hundred running sysctls) and a few findings.
func benchHost(i int) host {
	h := host{
		Name:    fmt.Sprintf("gpu-%05d", i),
		Labels:  map[string]string{"fleet": "gpu-training", "rack": fmt.Sprintf("r%02d", i%40)},
		NCCL:    []string{"2.20.5"},
		Driver:  "550.90.07",
		RDMA:    8,
		Sysctls: 300,
	}
	switch i % 10 {
	case 0:
		h.HugetlbCMA, h.Driver = "6G", "535.104.05"
	case 1:
		h.RemoveIPC, h.Errors = "yes", 2
	case 2:
		h.NCCL = []string{"2.18.3", "2.20.5"}
	}
	return h
}
