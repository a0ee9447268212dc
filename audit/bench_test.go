package audit

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
)

// BenchmarkAudit audits generated fleets: the default generator (a few
// dozen configurations) and -unique (every host differs). BENCH_HOSTS
// sets the size (default 1000); BENCH_DIR audits a directory of snapshots
// instead (then only once); profile with -cpuprofile.
func BenchmarkAudit(b *testing.B) {
	n := 1000
	if s := os.Getenv("BENCH_HOSTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	set, err := fleets.Load(true)
	if err != nil {
		b.Fatal(err)
	}
	if dir := os.Getenv("BENCH_DIR"); dir != "" {
		b.Run("dir", func(b *testing.B) {
			for b.Loop() {
				res, err := Run(context.Background(), Options{Fleets: set, Snapshots: []string{dir}, Stream: true})
				if err != nil || res.Summary.Findings == 0 {
					b.Fatalf("err %v, %d findings", err, res.Summary.Findings)
				}
				n = res.Summary.Hosts
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "hosts/s")
		})
		return
	}
	for _, unique := range []bool{false, true} {
		name := "default"
		if unique {
			name = "unique"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			if err := fleetgen.Generate(fleetgen.Options{N: n, Dir: dir, Roots: "../testdata/hosts", Seed: 1, Unique: unique}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				res, err := Run(context.Background(), Options{Fleets: set, Snapshots: []string{dir}, Stream: true})
				if err != nil || res.Summary.Findings == 0 {
					b.Fatalf("err %v, %d findings", err, res.Summary.Findings)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "hosts/s")
		})
	}
}
