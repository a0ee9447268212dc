package audit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/fleets"
	"github.com/fleetaudit/fleetaudit/internal/fleetgen"
	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/waivers"
)

// Hosts equal but for their name share one evaluation, and their findings
// one encoding; a waiver scoped to one of them must still mark that host's
// findings only, exactly as on findings evaluated host by host.
func TestWaiverOnSharedEvaluation(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := fleetgen.Generate(fleetgen.Options{N: 20, Dir: dir, Roots: "../testdata/hosts", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	gpu, err := os.ReadFile(filepath.Join(dir, "web-00018.json"))
	if err != nil {
		t.Fatal(err)
	}
	group := []string{"web-90001", "web-90002", "web-90003"}
	for _, name := range group {
		b := bytes.Replace(gpu, []byte(`"host":"web-00018"`), []byte(`"host":"`+name+`"`), 1)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()

	// A rule the group's shared evaluation finds: its finding on the
	// waived host must come from an encoding shared with the others.
	streamed, err := Run(ctx, Options{Fleets: set, Snapshots: []string{dir}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	var rule, severity string
	for f, shared := range streamed.All() {
		if f.Host == group[1] && shared != nil {
			rule, severity = f.Rule, f.Severity
			break
		}
	}
	if rule == "" {
		t.Fatalf("no finding of %s is shared with its equal hosts: the test proves nothing", group[1])
	}

	ws, err := waivers.Parse("waivers.yaml", []byte(fmt.Sprintf(`waivers:
  - rule: %s
    hosts: [%s]
    owner: alice@example.com
    justification: drained for repair
    expires: 2099-12-31
`, rule, group[1])))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

	res, err := Run(ctx, Options{Fleets: set, Snapshots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	rep := ws.Apply(now, res.Findings)
	want := perHost(t, set, dir)
	wantRep := ws.Apply(now, want)
	if rep.Waived != 1 || wantRep.Waived != 1 {
		t.Errorf("waived %d findings (host by host: %d), want 1", rep.Waived, wantRep.Waived)
	}
	if len(res.Findings) != len(want) {
		t.Fatalf("%d findings, evaluating each host alone gives %d", len(res.Findings), len(want))
	}
	for i := range want {
		if !equalJSON(res.Findings[i], want[i]) {
			t.Fatalf("finding %d with waivers applied:\n got %+v\nwant %+v", i, res.Findings[i], want[i])
		}
	}
	for _, f := range res.Findings {
		if f.Rule != rule {
			continue
		}
		if waived := f.Waived != nil; waived != (f.Host == group[1]) {
			t.Errorf("%s on %s: waived %v", f.Rule, f.Host, waived)
		}
	}
	// The equal hosts still have the finding unwaived: --fail-on sees it.
	if got := res.MaxSeverityRank(); got < policies.SeverityRank(severity) {
		t.Errorf("MaxSeverityRank %d with %s unwaived on %s, %s", got, severity, group[0], group[2])
	}
}

// Waivers applied to streamed findings mark each as it is read, exactly
// as on collected findings: the same findings marked, the same counts and
// states, the same worst unwaived severity; a waived finding is never
// handed out as a shared encoding (which is the unwaived one).
func TestStreamedWaiversAreCollectedWaivers(t *testing.T) {
	set, err := fleets.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := fleetgen.Generate(fleetgen.Options{N: 60, Dir: dir, Roots: "../testdata/hosts", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	// A host glob over part of groups of equal hosts, a rule everywhere
	// (critical, so --fail-on changes), a fleet-wide rule, an expired
	// waiver and one that matches nothing.
	ws, err := waivers.Parse("waivers.yaml", []byte(`waivers:
  - rule: thp-always
    hosts: [web-0001*]
    owner: alice@example.com
    justification: drained for repair
    expires: 2099-12-31
  - rule: hugetlb-cma-on-gpu
    fleet: gpu-training
    owner: bob@example.com
    justification: CMA needed by the vendor's driver until 2027
    expires: 2099-12-31
  - rule: sysctl-skew
    hosts: [gpu-0003*]
    owner: carol@example.com
    justification: tuning trial
    expires: 2099-12-31
  - rule: acs-redirect-on-gpu-path
    fleet: "*"
    owner: dave@example.com
    justification: old
    expires: 2020-01-01
  - rule: no-such-finding
    fleet: "*"
    owner: erin@example.com
    justification: nothing
    expires: 2099-12-31
`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	collected, err := Run(ctx, Options{Fleets: set, Snapshots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	want := collected.ApplyWaivers(ws, now)
	streamed, err := Run(ctx, Options{Fleets: set, Snapshots: []string{dir}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	got := streamed.ApplyWaivers(ws, now)
	if !equalJSON(got, want) {
		t.Errorf("waivers report streamed:\n%+v\ncollected:\n%+v", got, want)
	}
	if want.Waived == 0 || want.Expired != 1 || want.Stale != 1 {
		t.Fatalf("report %+v: the waivers do not test what they should", want)
	}
	// Read twice, as the summary and the renderer do.
	for pass := range 2 {
		i, shared := 0, 0
		for f, sh := range streamed.All() {
			if i >= len(collected.Findings) || !equalJSON(*f, collected.Findings[i]) {
				t.Fatalf("pass %d: streamed finding %d differs from the collected one", pass, i)
			}
			if sh != nil {
				shared++
				if f.Waived != nil || sh.Waived != nil {
					t.Fatalf("pass %d: waived finding %d handed out shared", pass, i)
				}
			}
			i++
		}
		if i != len(collected.Findings) || shared == 0 {
			t.Fatalf("pass %d: %d findings streamed (%d shared), %d collected", pass, i, shared, len(collected.Findings))
		}
	}
	if g, w := streamed.MaxSeverityRank(), collected.MaxSeverityRank(); g != w {
		t.Errorf("MaxSeverityRank streamed %d, collected %d", g, w)
	}
}
