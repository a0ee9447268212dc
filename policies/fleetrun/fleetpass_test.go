package fleetrun

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/policies/internal/testhost"

	"github.com/fleetaudit/fleetaudit/policies"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

const groupsRule = `package fleetaudit.fleet_rules.site

# METADATA
# title: Groups
# description: one finding per group, saying what the rule saw
# related_resources: [{ref: "https://example.com"}]
# custom: {id: fleet-shape, severity: low, profiles: [all], remediation: r, facts: [nvidia.driver_version]}
fleet_shape contains f if {
	some g in input.groups
	f := {"msg": sprintf("group of %d, %d groups, %d hosts, driver %s", [g.count, count(input.groups), input.count, g.nvidia.driver_version]), "evidence": ["nvidia.driver_version"], "group": g.group}
}
`

// Hosts whose projections are equal are one group: the rule sees three
// configurations of 30 hosts, and every host gets its group's finding,
// with the host's own name.
func TestFleetRulesSeeEachConfigurationOnce(t *testing.T) {
	pol := t.TempDir()
	writeFile(t, pol, "fleet.rego", groupsRule)
	var hosts []host
	for i := range 30 {
		h := host{Name: fmt.Sprintf("gpu-%02d", i), Driver: "550.90.07"}
		switch {
		case i%10 == 3:
			h.Driver = "535.104.05"
		case i%10 == 7:
			// Differs in a fact no fleet rule reads: the same group.
			h.RemoveIPC = "yes"
		case i == 29:
			h.Driver = "535.129.03"
		}
		hosts = append(hosts, h)
	}
	files := testhost.WriteSnapshots(t, t.TempDir(), hosts...)
	rep := runFiles(t, newEngine(t, policies.Options{PolicyDirs: []string{pol}, Fleets: gpuFleets()}), files, RunOptions{})
	got := map[string]string{}
	for _, f := range rep.Findings {
		if f.Rule == "fleet-shape" {
			if _, dup := got[f.Host]; dup {
				t.Errorf("%s has two fleet-shape findings", f.Host)
			}
			got[f.Host] = f.Message
		}
	}
	for _, h := range hosts {
		want := fmt.Sprintf("group of 26, 3 groups, 30 hosts, driver %s", h.Driver)
		switch h.Driver {
		case "535.104.05":
			want = "group of 3, 3 groups, 30 hosts, driver 535.104.05"
		case "535.129.03":
			want = "group of 1, 3 groups, 30 hosts, driver 535.129.03"
		}
		if got[h.Name] != want {
			t.Errorf("%s: %q, want %q", h.Name, got[h.Name], want)
		}
	}
	if len(rep.Failures) > 0 {
		t.Errorf("failures: %v", rep.Failures)
	}
}

// A fleet rule written for the per-host input (input.hosts) would find
// nothing: it is refused when the policies load, naming its file and line.
func TestFleetRuleReadingHostsIsRefused(t *testing.T) {
	pol := t.TempDir()
	writeFile(t, pol, "old.rego", `package fleetaudit.fleet_rules.old

# METADATA
# title: Old shape
# description: d
# related_resources: [{ref: "https://example.com"}]
# custom: {id: old-shape, severity: low, profiles: [all], remediation: r, facts: [kernel.release]}
old_shape contains f if {
	some h in hosts
	f := {"msg": "m", "evidence": ["kernel.release"], "host": h.host}
}

hosts := [h | some h in input.hosts; h.kernel.release == ""]
`)
	_, err := policies.New(t.Context(), policies.Options{PolicyDirs: []string{pol}})
	if err == nil {
		t.Fatal("a fleet rule reading input.hosts loaded")
	}
	for _, want := range []string{"old.rego:3", "old-shape reads input.hosts", "input.groups", `"group"`, "docs/writing-policies.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A fleet finding must name its group; one naming a host is an error of
// the fleet that says so, and the host rules' findings stay.
func TestFleetFindingNamingAHostFails(t *testing.T) {
	pol := t.TempDir()
	writeFile(t, pol, "fleet.rego", `package fleetaudit.fleet_rules.site

# METADATA
# title: Host
# description: d
# related_resources: [{ref: "https://example.com"}]
# custom: {id: names-host, severity: low, profiles: [all], remediation: r, facts: [kernel.release]}
names_host contains {"msg": "m", "evidence": [], "host": "gpu-1"}

# METADATA
# title: Out of range
# description: d
# related_resources: [{ref: "https://example.com"}]
# custom: {id: bad-group, severity: low, profiles: [all], remediation: r, facts: [kernel.release]}
bad_group contains {"msg": "m", "evidence": [], "group": 7}
`)
	files := testhost.WriteSnapshots(t, t.TempDir(), host{Name: "gpu-1", HugetlbCMA: "6G", RDMA: 8}, host{Name: "gpu-2"})
	rep := runFiles(t, newEngine(t, policies.Options{PolicyDirs: []string{pol}, Fleets: gpuFleets()}), files, RunOptions{})
	var msgs []string
	for _, f := range rep.Failures {
		if f.File == "" {
			msgs = append(msgs, f.Err.Error())
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`fleet.rego:3): a fleet-wide finding names "group"`, `not "host"`, "fleet.rego:10): finding names group 7, which is not one of the fleet's 2 groups"} {
		if !strings.Contains(all, want) {
			t.Errorf("fleet failures %q do not say %q", all, want)
		}
	}
	if !slices.ContainsFunc(findingsOf(rep, "gpu-1"), func(s string) bool { return strings.HasPrefix(s, "hugetlb-cma-on-gpu") }) {
		t.Errorf("host findings lost: %q", findingsOf(rep, "gpu-1"))
	}
}

// BenchmarkFleetPass measures the fleet-wide pass alone over 100,000 hosts
// of 40 configurations (testhost.Bench: racks and findings vary): the groups
// are evaluated once each, the hosts cost a group index.
func BenchmarkFleetPass(b *testing.B) {
	e := newEngine(b, policies.Options{Fleets: gpuFleets()})
	const n, configs = 100000, 40
	s := &runState{e: e, budget: DefaultHostTimeout}
	projs := make([]*policies.Projection, configs)
	tmpls := make([]*template, configs)
	for i := range tmpls {
		projs[i] = s.fleetProjection(testhost.Bench(i).Doc(b), new(docSections))
		tmpls[i] = new(template)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("gpu-%06d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		a := newAudit(n)
		for i := range n {
			a.hosts[i] = a.names.record(HostRun{Host: names[i], Fleet: "gpu-training"}, tmpls[i%configs])
		}
		for i, t := range tmpls {
			t.proj = projs[i]
		}
		b.StartTimer()
		_, failures, err := s.fleetPass(b.Context(), a, 2)
		if err != nil || len(failures) > 0 || len(a.groups) != configs {
			b.Fatal(err, failures, len(a.groups))
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "hosts/s")
}

// A projection's key is the same whether it was made from a file's shared
// sections or from the whole document, and differs when a fact fleet
// rules read differs.
func TestProjectionKeyAcrossSections(t *testing.T) {
	e := newEngine(t, policies.Options{Fleets: gpuFleets()})
	s := &runState{e: e, budget: DefaultHostTimeout, sections: newSectionCache()}
	raw := func(h host) []byte {
		b, err := json.Marshal(h.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key := func(b []byte, split bool) digest {
		w := new(worker)
		var doc map[string]any
		if split {
			var err error
			if doc, err = s.decode(b, w); err != nil {
				t.Fatal(err)
			}
			if !w.sections.split {
				t.Fatal("the file was not read by its members")
			}
		} else if err := snapshot.DecodeJSON(b, &doc); err != nil {
			t.Fatal(err)
		}
		p := projectSections(e, doc, &w.sections)
		delete(p, "host")
		parts, ok := projectionParts(e, p, &w.sections)
		if !ok {
			t.Fatal("no key")
		}
		return parts.key()
	}
	a, b := testhost.Bench(1), testhost.Bench(1)
	b.Name = "other-name"
	c := testhost.Bench(1)
	c.Driver = "535.104.05"
	ka := key(raw(a), true)
	if kb := key(raw(b), true); kb != ka {
		t.Error("two hosts that differ only in name have different keys")
	}
	if kw := key(raw(a), false); kw != ka {
		t.Error("the key from sections differs from the key of the whole document")
	}
	if kc := key(raw(c), true); kc == ka {
		t.Error("hosts with different drivers share a key")
	}
}
