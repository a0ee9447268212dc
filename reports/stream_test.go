package reports

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetaudit/fleetaudit/audit"
	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// A format that streams (Streams) writes from audit.Result.All, where
// findings many hosts share come marked as shared, what it writes from
// collected findings: compared on a generated fleet (hosts sharing
// configurations, some waived), in every grouping.
func TestStreamedReportsAreCollectedReports(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := fleetgen.Generate(fleetgen.Options{N: 300, Dir: dir, Roots: "../testdata/hosts", Seed: 5}); err != nil {
		t.Fatal(err)
	}
	wfile := filepath.Join(t.TempDir(), "waivers.yaml")
	if err := os.WriteFile(wfile, []byte(`waivers:
  - rule: hugetlb-cma-on-gpu
    fleet: gpu-training
    hosts: ["gpu-000[0-4]*"]
    owner: alice@example.com
    justification: Rollout INFRA-1234.
    expires: 2026-09-30
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := waivers.Load(wfile)
	if err != nil {
		t.Fatal(err)
	}
	run := func(stream bool) *audit.Result {
		res, err := audit.Run(context.Background(), audit.Options{Fleets: set, Snapshots: []string{dir}, Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		res.Waivers = res.ApplyWaivers(ws, goldenNow)
		return res
	}
	collected := run(false)
	if collected.Waivers.Waived == 0 {
		t.Fatal("the waiver covers no finding")
	}
	shared := 0
	for _, s := range run(true).All() {
		if s != nil {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("no finding streams as shared")
	}
	for _, f := range formats {
		if !f.Streams() {
			continue
		}
		format := f.Name()
		for _, group := range append([]string{""}, GroupModes...) {
			t.Run(format+"/"+group, func(t *testing.T) {
				r, _ := Get(format)
				opts := Options{Width: 100, GroupBy: group}
				var want, got bytes.Buffer
				if err := r.Render(&want, collected, opts); err != nil {
					t.Fatal(err)
				}
				if err := r.Render(&got, run(true), opts); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("streamed %s differs from collected (%d and %d bytes)", format, got.Len(), want.Len())
				}
			})
		}
	}
}
