package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/inventory"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

func loadFleets(t *testing.T) *fleets.Set {
	t.Helper()
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The first example of `audit --help` reads two hosts of fourteen: the
// twelve others get their collection-error and nothing else (they had 18
// memlock-too-low findings, "memlock hard limit for * is unset").
func TestInventoryExampleReportsOnlyWhatItRead(t *testing.T) {
	inv, err := inventory.Load("../examples/fleet/inventory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Fleets: loadFleets(t), Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary; s.Hosts != 14 || s.Audited != 2 || s.Unread != 12 {
		t.Errorf("summary hosts %d audited %d unread %d, want 14, 2, 12", s.Hosts, s.Audited, s.Unread)
	}
	perHost := map[string][]string{}
	for _, f := range res.Findings {
		perHost[f.Host] = append(perHost[f.Host], f.Rule)
	}
	collectionErrors := 0
	for host, rules := range perHost {
		if host == "gpu-b-007" || host == "gpu-k-001" { // the hosts with a root
			continue
		}
		if len(rules) != 1 || rules[0] != "collection-error" {
			t.Errorf("%s was never read, yet has findings %v", host, rules)
		}
		collectionErrors += len(rules)
	}
	if collectionErrors != 12 || len(res.Errors) != 12 {
		t.Errorf("%d collection-error findings and %d errors for the unread hosts, want 12 each", collectionErrors, len(res.Errors))
	}
	if res.Summary.RulesSkipped["memlock-too-low"] != 0 {
		t.Errorf("memlock-too-low skipped on the host that was read: %v", res.Summary.RulesSkipped)
	}
}

func TestSnapshotsThatCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "c.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Fleets: loadFleets(t), Snapshots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary; s.Hosts != 3 || s.Audited != 0 || s.Unread != 3 || len(res.Errors) != 3 {
		t.Errorf("summary %+v, errors %+v: want 3 hosts, none audited", s, res.Errors)
	}

	empty := t.TempDir()
	_, err = Run(context.Background(), Options{Fleets: loadFleets(t), Snapshots: []string{empty}})
	if !errors.Is(err, ErrNoSnapshots) || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty --snapshots directory: err = %v", err)
	}
}

// A host whose /etc/hostname is 300 characters aborted the whole audit
// ("file name too long" creating its work snapshot); now it is audited, and
// so is the healthy host beside it.
func TestLongHostNameDoesNotAbortTheAudit(t *testing.T) {
	long := strings.Repeat("h", 300)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte(long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{
		Fleets: loadFleets(t),
		Roots:  []string{root, "../testdata/hosts/web-node"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Hosts != 2 || res.Summary.Audited != 2 {
		t.Errorf("summary %+v, errors %+v: want both hosts audited", res.Summary, res.Errors)
	}
	seen := map[string]bool{}
	for _, f := range res.Findings {
		seen[f.Host] = true
	}
	if !seen["web-01"] {
		t.Errorf("the healthy host was not audited: hosts with findings %v", seen)
	}
}

// Collected hosts go straight into the engine: nothing is written while
// they are audited (the run once kept a work directory of snapshot files
// under TMPDIR), and each reaches the rules with its own origin.
func TestCollectedHostsWriteNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var mu sync.Mutex
	var origins, written []string
	res, err := Run(context.Background(), Options{
		Fleets: loadFleets(t),
		Roots:  []string{"../testdata/hosts/gpu-node", "../testdata/hosts/web-node"},
		NoExec: true,
		Loaded: func(in fleetrun.HostInput, doc, _ map[string]any) {
			entries, _ := os.ReadDir(tmp)
			mu.Lock()
			defer mu.Unlock()
			origins = append(origins, in.Origin+" "+doc["host"].(string))
			for _, e := range entries {
				written = append(written, e.Name())
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(origins)
	want := []string{"../testdata/hosts/gpu-node gpu-a-001", "../testdata/hosts/web-node web-01"}
	if diff := cmp.Diff(want, origins); diff != "" || len(written) > 0 {
		t.Errorf("hosts (-want +got):\n%s\nwritten under TMPDIR during the run: %v", diff, written)
	}
	if res.Summary.Audited != 2 {
		t.Errorf("summary %+v", res.Summary)
	}
}

// Errors about a collected host name its root, not a file of the run: two
// roots of one host name (once: two deleted work files).
func TestCollectedHostErrorsNameTheRoot(t *testing.T) {
	a, b := "../testdata/hosts/gpu-node", "./../testdata/hosts/gpu-node"
	res, err := Run(context.Background(), Options{Fleets: loadFleets(t), Roots: []string{a, b}, NoExec: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []HostError{{Host: "gpu-a-001", Fleet: "gpu-training", Source: b,
		Error: "host name also used by " + a + "; fleet-wide rules counted that file only"}}
	if diff := cmp.Diff(want, res.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
