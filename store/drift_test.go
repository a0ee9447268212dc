package store

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/policies/fleetrun"
)

func findHost(d *Drift, host string) *HostDrift {
	for i := range d.Hosts {
		if d.Hosts[i].Host == host {
			return &d.Hosts[i]
		}
	}
	return nil
}

func findFact(h *HostDrift, fact string) *FactChange {
	for i := range h.Facts {
		if h.Facts[i].Fact == fact {
			return &h.Facts[i]
		}
	}
	return nil
}

func rules(fs []policies.Finding) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		m[f.Rule]++
	}
	return m
}

// driftStore records the example fleet, then the next night's fleet:
//   - gpu-a-001: hugetlb_cma taken off the configured and running command
//     lines and rebooted, so no CMA area (hugetlb-cma-on-gpu resolved,
//     boot-cmdline-skew new);
//   - gpu-a-002: kernel.numa_balancing 1 → 0 at runtime
//     (numa-balancing-enabled resolved);
//   - gpu-a-003: the same hugetlb_cma=6G, now set by 70-gpu.cfg (moved;
//     the finding stays open);
//   - gpu-a-004: its snapshot unreadable (findings unknown, not resolved);
//   - gpu-a-005: its nvidia section not collected (no facts "removed");
//   - every host collected again (new collected_at).
func driftStore(t *testing.T, path string) (*SQLite, RunID, RunID) {
	t.Helper()
	s := openTest(t, path)
	first, _ := record(t, s, copyFleet(t, nil))
	second, _ := record(t, s, copyFleet(t, func(host string, doc map[string]any) any {
		doc["collected_at"] = "2026-12-01T02:00:00Z"
		boot, _ := doc["boot"].(map[string]any)
		sources, _ := doc["sources"].(map[string]any)
		switch host {
		case "gpu-a-001":
			drop := strings.NewReplacer(" hugetlb_cma=6G", "", "hugetlb_cma=6G", "")
			boot["running"].(map[string]any)["cmdline"] = drop.Replace(boot["running"].(map[string]any)["cmdline"].(string))
			boot["configured"].(map[string]any)["cmdline"] = drop.Replace(boot["configured"].(map[string]any)["cmdline"].(string))
			grub := boot["configured"].(map[string]any)["grub"].(map[string]any)
			grub["cmdline_linux"] = drop.Replace(grub["cmdline_linux"].(string))
			for _, side := range []string{"configured", "running"} {
				delete(boot[side].(map[string]any)["params"].(map[string]any), "hugetlb_cma")
				delete(sources, "boot."+side+".params.hugetlb_cma")
			}
			// Booted without it, the kernel reserves no CMA area
			// (/proc/meminfo's CmaTotal was hugetlb_cma's 6G): a CMA
			// area left behind would be a new finding of its own, one
			// no boot parameter explains.
			mem := doc["memory"].(map[string]any)
			mem["cma_total_kb"], mem["cma_free_kb"] = 0, 0
		case "gpu-a-002":
			doc["sysctl"].(map[string]any)["running"].(map[string]any)["kernel.numa_balancing"] = "0"
		case "gpu-a-003":
			sources["boot.configured.params.hugetlb_cma"] = "/etc/default/grub.d/70-gpu.cfg:5"
		case "gpu-a-004":
			return "{ this is not JSON"
		case "gpu-a-005":
			delete(doc, "nvidia")
			doc["errors"] = append(doc["errors"].([]any), map[string]any{"collector": "nvidia", "path": "/proc/driver/nvidia/version", "reason": "permission denied"})
		}
		return doc
	}))
	return s, first, second
}

func TestDriftBetweenRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s, first, second := driftStore(t, be.new(t))
		d, err := Compute(ctx, s, DriftQuery{From: first, To: second})
		if err != nil {
			t.Fatal(err)
		}

		// A fact taken away, with the file that had set it.
		h1 := findHost(d, "gpu-a-001")
		if h1 == nil || h1.State != HostChanged {
			t.Fatalf("gpu-a-001: %+v", h1)
		}
		c := findFact(h1, "boot.configured.params.hugetlb_cma")
		if c == nil || c.Change != FactRemoved || c.Before != "6G" || c.After != nil || c.BeforeSource != "/etc/default/grub.d/60-hugetlb.cfg:3" {
			t.Errorf("gpu-a-001 hugetlb_cma change = %+v", c)
		}
		// Its boot parameters now differ from the rest of the fleet's: the
		// fleet-wide skew rule reports that as new.
		if rules(h1.Resolved)["hugetlb-cma-on-gpu"] != 1 || len(h1.New) != 1 || rules(h1.New)["boot-cmdline-skew"] != 1 || len(h1.Unknown) != 0 {
			t.Errorf("gpu-a-001 resolved %v, new %v, unknown %v", rules(h1.Resolved), rules(h1.New), rules(h1.Unknown))
		}
		if len(h1.Open) == 0 || rules(h1.Open)["hugetlb-cma-on-gpu"] != 0 {
			t.Errorf("gpu-a-001 still open: %v", rules(h1.Open))
		}

		// A value changed, with the file on each side.
		h2 := findHost(d, "gpu-a-002")
		c = findFact(h2, "sysctl.running.kernel.numa_balancing")
		if c == nil || c.Change != FactChanged || c.Before != "1" || c.After != "0" || c.AfterSource != "/proc/sys/kernel/numa_balancing" {
			t.Errorf("gpu-a-002 numa_balancing change = %+v", c)
		}
		if len(h2.Facts) != 1 || rules(h2.Resolved)["numa-balancing-enabled"] != 1 {
			t.Errorf("gpu-a-002 facts %+v, resolved %v", h2.Facts, rules(h2.Resolved))
		}

		// The same value set by another file: moved, and the finding (whose
		// evidence names the new file) is still open.
		h3 := findHost(d, "gpu-a-003")
		c = findFact(h3, "boot.configured.params.hugetlb_cma")
		if c == nil || c.Change != FactMoved || c.BeforeSource != "/etc/default/grub.d/60-hugetlb.cfg:3" || c.AfterSource != "/etc/default/grub.d/70-gpu.cfg:5" {
			t.Errorf("gpu-a-003 hugetlb_cma = %+v", c)
		}
		if rules(h3.Open)["hugetlb-cma-on-gpu"] != 1 || len(h3.Resolved) != 0 || len(h3.New) != 0 {
			t.Errorf("gpu-a-003 open %v resolved %v new %v", rules(h3.Open), rules(h3.Resolved), rules(h3.New))
		}

		// Not read: no fact compared, and its findings are unknown, never
		// resolved; the collection error is new.
		h4 := findHost(d, "gpu-a-004")
		if h4 == nil || h4.State != HostUnread || h4.Unread == "" || len(h4.Facts) != 0 {
			t.Fatalf("gpu-a-004: %+v", h4)
		}
		if len(h4.Resolved) != 0 || len(h4.Unknown) == 0 || rules(h4.New)["collection-error"] != 1 {
			t.Errorf("gpu-a-004 resolved %v unknown %v new %v", rules(h4.Resolved), rules(h4.Unknown), rules(h4.New))
		}

		// A section not collected is one line, and what rested on it unknown.
		h5 := findHost(d, "gpu-a-005")
		c = findFact(h5, "nvidia")
		if c == nil || c.Change != FactNotCollected || c.NotCollectedIn != "to" {
			t.Errorf("gpu-a-005 nvidia = %+v", c)
		}
		for _, f := range h5.Facts {
			if f.Change == FactRemoved {
				t.Errorf("gpu-a-005: %s reported removed though its section was not collected", f.Fact)
			}
		}
		for _, f := range h5.Resolved {
			for _, ev := range f.Evidence {
				if ev.Fact == "nvidia" || len(ev.Fact) > 7 && ev.Fact[:7] == "nvidia." {
					t.Errorf("gpu-a-005: %s resolved though nvidia was not collected", f.Rule)
				}
			}
		}

		// Hosts whose snapshot did not change are counted, not listed.
		if findHost(d, "web-01") != nil || d.Summary.Unchanged < 7 {
			t.Errorf("unchanged hosts: %d, web-01 listed: %v", d.Summary.Unchanged, findHost(d, "web-01") != nil)
		}
		if d.Summary.Resolved < 2 || d.Summary.Unread != 1 {
			t.Errorf("summary = %+v", d.Summary)
		}

		// Backwards, what was resolved is new.
		back, err := Compute(ctx, s, DriftQuery{From: second, To: first, Hosts: []string{"gpu-a-00[12]"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Hosts) != 2 || rules(findHost(back, "gpu-a-001").New)["hugetlb-cma-on-gpu"] != 1 {
			t.Errorf("backwards: %+v", back.Hosts)
		}
		if c := findFact(findHost(back, "gpu-a-001"), "boot.configured.params.hugetlb_cma"); c == nil || c.Change != FactAdded || c.AfterSource != "/etc/default/grub.d/60-hugetlb.cfg:3" {
			t.Errorf("backwards hugetlb_cma = %+v", c)
		}

		// --fleet keeps that fleet's hosts.
		web, err := Compute(ctx, s, DriftQuery{From: first, To: second, Fleet: "web-serving"})
		if err != nil {
			t.Fatal(err)
		}
		if len(web.Hosts) != 0 || web.Summary.Hosts != 4 {
			t.Errorf("web-serving drift: %d hosts listed, summary %+v", len(web.Hosts), web.Summary)
		}
	})
}

// A finding is its rule and the facts it cites: when hugetlb_cma leaves the
// command lines but /proc/meminfo still shows the CMA area (a kernel build
// default), the parameter's finding is resolved and the unexplained area's
// is new, with its own fix (cma=0), not one finding left open.
func TestDriftCMAAreaOutlivesItsParameter(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		first, _ := record(t, s, copyFleet(t, nil))
		second, _ := record(t, s, copyFleet(t, func(host string, doc map[string]any) any {
			if host == "gpu-a-001" {
				boot := doc["boot"].(map[string]any)
				for _, side := range []string{"configured", "running"} {
					delete(boot[side].(map[string]any)["params"].(map[string]any), "hugetlb_cma")
				}
			}
			return doc
		}))
		d, err := Compute(ctx, s, DriftQuery{From: first, To: second, Hosts: []string{"gpu-a-001"}})
		if err != nil {
			t.Fatal(err)
		}
		h := findHost(d, "gpu-a-001")
		if h == nil || rules(h.Resolved)["hugetlb-cma-on-gpu"] != 1 || rules(h.New)["hugetlb-cma-on-gpu"] != 1 || rules(h.Open)["hugetlb-cma-on-gpu"] != 0 {
			t.Fatalf("gpu-a-001: %+v", h)
		}
		cites := func(f policies.Finding, fact string) bool {
			for _, ev := range f.Evidence {
				if ev.Fact == fact {
					return true
				}
			}
			return false
		}
		for _, f := range h.Resolved {
			if f.Rule == "hugetlb-cma-on-gpu" && !cites(f, "boot.configured.params.hugetlb_cma") {
				t.Errorf("resolved: %s %v", f.Message, f.Evidence)
			}
		}
		for _, f := range h.New {
			if f.Rule != "hugetlb-cma-on-gpu" {
				continue
			}
			if set, _ := f.Fix["set"].(map[string]any); !cites(f, "memory.cma_total_kb") || set["cma"] != "0" {
				t.Errorf("new: %s %v fix %v", f.Message, f.Evidence, f.Fix)
			}
		}
	})
}

func TestDriftRefusesIncompleteRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := openTest(t, be.new(t))
		first, _ := record(t, s, copyFleet(t, nil))
		partial, err := s.BeginRun(ctx, RunMeta{Version: "test", Writer: "node-7:4242"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Compute(ctx, s, DriftQuery{From: first, To: partial})
		if err == nil || !contains(err.Error(), "incomplete") || !contains(err.Error(), "node-7:4242") {
			t.Errorf("drift to an incomplete run: %v", err)
		}
		if prev, err := Previous(ctx, s, partial); err != nil || prev != first {
			t.Errorf("previous complete run = %d, %v", prev, err)
		}
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A finding the later run could not have reported is never resolved.
func TestCouldFind(t *testing.T) {
	f := policies.Finding{Rule: "memlock-too-low", Host: "h", Evidence: []policies.Evidence{{Fact: "limits.effective.*.memlock.hard"}}}
	read := Host{HostRun: fleetrun.HostRun{Host: "h"}}
	collected := map[string]any{"host": "h", "limits": map[string]any{"effective": map[string]any{}}}
	for _, tc := range []struct {
		name string
		host Host
		ran  []string
		doc  map[string]any
		want bool
	}{
		{"rule ran on collected facts", read, []string{"memlock-too-low"}, collected, true},
		{"snapshot unchanged", read, nil, nil, true},
		{"the fleet no longer runs the rule", read, []string{"other"}, collected, false},
		{"host not read", Host{HostRun: fleetrun.HostRun{Host: "h", Unread: "gone"}}, nil, nil, false},
		{"rule skipped for lack of facts", Host{HostRun: fleetrun.HostRun{Host: "h", Skipped: []string{"memlock-too-low"}}}, nil, nil, false},
		{"fact's section not collected", read, nil, map[string]any{"host": "h"}, false},
	} {
		if got := couldFind(f, tc.host, tc.ran, tc.doc); got != tc.want {
			t.Errorf("%s: couldFind = %v, want %v", tc.name, got, tc.want)
		}
	}
}
