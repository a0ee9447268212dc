package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

const exampleSnapshots = "../examples/fleet/snapshots"

func fleetsByHost(r *Result) map[string]string {
	out := map[string]string{}
	for _, f := range r.Findings {
		out[f.Host] = f.Fleet
	}
	return out
}

func TestFleetResolution(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inv := filepath.Join(dir, "inv.yaml")
	// web-01 is named into the training fleet on purpose: the inventory wins
	// over hostname matching. gpu-a-001 names a fleet no profile defines.
	if err := os.WriteFile(inv, []byte("hosts:\n  web-01: {fleet: gpu-training}\n  gpu-a-001: {fleet: inference}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := inventory.Load(inv)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{
		Fleets:    set,
		Inventory: loaded,
		Snapshots: []string{filepath.Join(exampleSnapshots, "web-01.json"), filepath.Join(exampleSnapshots, "gpu-a-001.json"), filepath.Join(exampleSnapshots, "web-02.json")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := fleetsByHost(res)
	if got["web-01"] != "gpu-training" || got["gpu-a-001"] != "" {
		t.Errorf("fleets by host = %v", got)
	}
	if res.Summary.Fleets["web-serving"].Hosts != 1 || res.Summary.Hosts != 3 {
		t.Errorf("summary = %+v", res.Summary)
	}
	var unknown bool
	for _, f := range res.Findings {
		unknown = unknown || (f.Host == "gpu-a-001" && f.Rule == "unknown-fleet")
	}
	if !unknown || len(res.Errors) != 1 || res.Errors[0].Host != "gpu-a-001" {
		t.Errorf("unknown-fleet finding %v, errors %+v", unknown, res.Errors)
	}
}

func TestRunNeedsInput(t *testing.T) {
	set, _ := fleets.Load(true)
	if _, err := Run(context.Background(), Options{Fleets: set}); !errors.Is(err, ErrNoInput) {
		t.Errorf("err = %v, want ErrNoInput", err)
	}
}

func TestFindingsAreOrderedForReading(t *testing.T) {
	set, _ := fleets.Load(true)
	res, err := Run(context.Background(), Options{Fleets: set, Snapshots: []string{exampleSnapshots}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(res.Findings); i++ {
		a, b := res.Findings[i-1], res.Findings[i]
		if a.Fleet > b.Fleet || (a.Fleet == b.Fleet && policies.SeverityRank(a.Severity) < policies.SeverityRank(b.Severity)) {
			t.Fatalf("finding %d (%s %s %s) before %d (%s %s %s)", i-1, a.Fleet, a.Severity, a.Host, i, b.Fleet, b.Severity, b.Host)
		}
	}
}

// Sized is told the hosts a run will read once, before it reads any: the
// command sets the collector's target from it.
func TestSizedIsToldTheHostsBeforeTheyAreRead(t *testing.T) {
	set, _ := fleets.Load(true)
	files, err := filepath.Glob(filepath.Join(exampleSnapshots, "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("example snapshots: %v, %v", files, err)
	}
	var told, readBefore []int
	var mu sync.Mutex
	read := 0
	_, err = Run(context.Background(), Options{Fleets: set, Snapshots: []string{exampleSnapshots},
		Sized: func(n int) { told = append(told, n); readBefore = append(readBefore, read) },
		Loaded: func(fleetrun.HostInput, map[string]any, map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			read++
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0] != len(files) || readBefore[0] != 0 {
		t.Errorf("Sized told %v after %v hosts read, want once %d before any", told, readBefore, len(files))
	}
	if read != len(files) {
		t.Errorf("%d hosts read, want %d", read, len(files))
	}
}
