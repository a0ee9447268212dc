package configrepo

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// The plan's fixture fleet: real fixture roots (testdata/hosts) with the
// repo's files deployed as at base, collected by the real collectors.
//
//	gpu-a-001, gpu-a-002  driver 535.104.05 (no FOLL_LONGTERM), RDMA
//	gpu-b-001             driver 550.90.07 (FOLL_LONGTERM from 550.67), RDMA
//	gpu-c-001             driver 535.104.05, no RDMA devices
//	gpu-l-001             as gpu-a, with /etc/sysctl.d/99-local.conf
//	gpu-r-001             Rocky 9 with BLS entries, driver 535.161.08, RDMA
//	web-01                the web fleet
//	gpu-s-001             a snapshot three days old
//	gpu-u-001             unreachable in its run
//	db-01                 a fleet the repo does not render
const planNow = "2026-12-07T01:00:00Z"

// planRepo is the config repo whose base the fixture hosts run.
func planRepo(t *testing.T) *gitRepo {
	t.Helper()
	r := newGitRepo(t)
	r.Write(ManifestFile, `fleets:
  gpu-training: {layers: [base, ubuntu, gpu]}
  gpu-rocky: {layers: [base, rocky, gpu], profile: gpu-training, labels: {os: rocky}}
  web-serving: {layers: [base, ubuntu, web]}
`)
	rocky, err := os.ReadFile("../testdata/hosts/rocky9-bls/etc/default/grub")
	if err != nil {
		t.Fatal(err)
	}
	r.Write("layers/rocky/etc/default/grub", string(rocky))
	r.Write("layers/base/etc/sysctl.d/10-base.conf", "kernel.panic = 10\n")
	node := "../testdata/hosts/gpu-node/etc/"
	for repo, host := range map[string]string{
		"layers/ubuntu/etc/default/grub":                   "default/grub",
		"layers/gpu/etc/default/grub.d/70-gpu.cfg":         "default/grub.d/70-gpu.cfg",
		"layers/gpu/etc/sysctl.d/60-gpu-training.conf":     "sysctl.d/60-gpu-training.conf",
		"layers/gpu/etc/security/limits.d/90-rdma.conf":    "security/limits.d/90-rdma.conf",
		"layers/gpu/etc/systemd/logind.conf.d/10-hpc.conf": "systemd/logind.conf.d/10-hpc.conf",
	} {
		b, err := os.ReadFile(node + host)
		if err != nil {
			t.Fatal(err)
		}
		r.Write(repo, string(b))
	}
	r.Write("layers/web/etc/sysctl.d/60-net.conf", "net.core.somaxconn = 8192\n")
	r.Commit("the fleet as deployed")
	return r
}

type fixtureHost struct {
	name, from, fleet string
	driver            string // "" keeps the fixture's
	noRDMA            bool
	files             map[string]string // host-local files
	labels            map[string]string
	age               time.Duration
	unread            string
}

func planFixtures() []fixtureHost {
	local := map[string]string{"etc/sysctl.d/99-local.conf": "# this host runs a search index\nvm.max_map_count = 1048576\n"}
	return []fixtureHost{
		{name: "gpu-a-001", from: "gpu-node", fleet: "gpu-training"},
		{name: "gpu-a-002", from: "gpu-node", fleet: "gpu-training"},
		{name: "gpu-b-001", from: "gpu-node", fleet: "gpu-training", driver: "550.90.07"},
		{name: "gpu-c-001", from: "gpu-node", fleet: "gpu-training", noRDMA: true},
		{name: "gpu-l-001", from: "gpu-node", fleet: "gpu-training", files: local},
		{name: "gpu-r-001", from: "rocky9-bls", fleet: "gpu-training", labels: map[string]string{"os": "rocky"}},
		{name: "web-01", from: "web-node", fleet: "web-serving"},
		{name: "gpu-s-001", from: "gpu-node", fleet: "gpu-training", age: 72 * time.Hour},
		{name: "gpu-u-001", from: "gpu-node", fleet: "gpu-training", unread: "dial tcp 10.0.0.9:22: connect: no route to host"},
		{name: "db-01", from: "web-node", fleet: "database"},
	}
}

// deploy writes the repo's files at ref into a host root, as the rollout of
// base left them.
func deploy(t *testing.T, r *gitRepo, ref, fleet, root string) {
	t.Helper()
	co, err := CheckoutRef(context.Background(), r.Dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseManifest(co.Files[ManifestFile].Data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Fleets[fleet] == nil {
		return
	}
	for _, layer := range m.Fleets[fleet].Layers {
		prefix := "layers/" + layer + "/"
		for name, f := range co.Files {
			if rel, ok := strings.CutPrefix(name, prefix); ok {
				write(t, filepath.Join(root, rel), string(f.Data))
			}
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordFixtures collects each fixture host after the rollout of ref.
func recordFixtures(t *testing.T, r *gitRepo, ref string) []PlanHost {
	t.Helper()
	return recordHosts(t, r, ref, planFixtures())
}

func recordHosts(t *testing.T, r *gitRepo, ref string, fixtures []fixtureHost) []PlanHost {
	t.Helper()
	now, _ := time.Parse(time.RFC3339, planNow)
	var out []PlanHost
	for _, h := range fixtures {
		root := filepath.Join(t.TempDir(), h.name)
		if err := os.CopyFS(root, os.DirFS(filepath.Join("../testdata/hosts", h.from))); err != nil {
			t.Fatal(err)
		}
		// The fixture gpu-node is the incident host: these hosts are from
		// before it.
		os.Remove(filepath.Join(root, "etc/default/grub.d/60-hugetlb.cfg"))
		entries, _ := filepath.Glob(filepath.Join(root, "boot/loader/entries/*.conf"))
		for _, p := range append(entries, filepath.Join(root, "proc/cmdline")) {
			if b, err := os.ReadFile(p); err == nil {
				write(t, p, regexp.MustCompile(` hugetlb_cma=\S+`).ReplaceAllString(string(b), ""))
			}
		}
		if b, err := os.ReadFile(filepath.Join(root, "proc/meminfo")); err == nil {
			b = regexp.MustCompile(`(?m)^(Cma(Total|Free)):.*$`).ReplaceAll(b, []byte("$1:              0 kB"))
			write(t, filepath.Join(root, "proc/meminfo"), string(b))
		}
		fleet := h.fleet
		if h.labels["os"] == "rocky" {
			fleet = "gpu-rocky"
		}
		deploy(t, r, ref, fleet, root)
		if h.driver != "" {
			p := filepath.Join(root, "proc/driver/nvidia/version")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			write(t, p, regexp.MustCompile(`Kernel Module  [0-9.]+`).ReplaceAllString(string(b), "Kernel Module  "+h.driver))
		}
		if h.noRDMA {
			for _, d := range []string{"sys/class/infiniband", "dev/infiniband", "sys/class/infiniband_verbs"} {
				os.RemoveAll(filepath.Join(root, d))
			}
		}
		for p, content := range h.files {
			write(t, filepath.Join(root, p), content)
		}
		target, err := collectors.Local(root, collectors.LocalOptions{NoExec: true})
		if err != nil {
			t.Fatal(err)
		}
		at := now.Add(-time.Hour - h.age)
		snap, err := collectors.Collect(context.Background(), target, collectors.Options{Hostname: h.name, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		snap.Labels = h.labels
		raw, err := snap.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, PlanHost{Name: h.name, Origin: "run 1", Fleet: h.fleet, Unread: h.unread,
			Read: func(context.Context, []byte) ([]byte, error) { return raw, nil }})
	}
	return out
}

func planGate(t *testing.T, r *gitRepo, base, head string, hosts []PlanHost) *Plan {
	t.Helper()
	now, _ := time.Parse(time.RFC3339, planNow)
	res, err := Run(context.Background(), Options{Repo: r.Dir, Base: base, Head: head, Fleets: testFleets(t),
		Plan: &PlanOptions{Source: "test", Hosts: hosts, Now: now}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan == nil {
		t.Fatal("no plan")
	}
	return res.Plan
}

// outcomes lists a fleet's host groups as "kind hosts: rule severity" lines.
func outcomes(p *Plan, fleet string) []string {
	var out []string
	for _, f := range p.Fleets {
		if f.Fleet != fleet {
			continue
		}
		for _, x := range []struct {
			kind string
			gs   []HostGroup
		}{{"newly failing", f.NewlyFailing}, {"fixed", f.Fixed}, {"unchanged", f.Unchanged}} {
			for _, g := range x.gs {
				line := x.kind + " " + strings.Join(g.Hosts, ",") + ":"
				for _, i := range g.Introduced {
					line += " +" + i.Rule + "/" + i.Severity
				}
				for _, i := range g.Resolved {
					line += " -" + i.Rule + "/" + i.Severity
				}
				out = append(out, line)
			}
		}
	}
	slices.Sort(out)
	return out
}

func notPlanned(p *Plan) []string {
	var out []string
	for _, n := range p.NotPlanned {
		out = append(out, n.Host+" "+n.Reason)
	}
	slices.Sort(out)
	return out
}

// The incident change: hugetlb_cma=6G in the layer every fleet shares. The
// hugetlb rule's documented condition: critical where RDMA devices are
// present and the driver pins without FOLL_LONGTERM (535 before
// 535.171.04), high on the rest; a BLS host's entries do not take the GRUB
// defaults until the next kernel install, which the rule reports as
// planted. The web fleet's profile has no such rule.
func TestPlanIncidentIsCriticalOnlyWhereTheDriverLacksTheFix(t *testing.T) {
	r := planRepo(t)
	base := r.Git("rev-parse", "HEAD")
	hosts := recordFixtures(t, r, base)
	r.Write("layers/base/etc/default/grub.d/60-hugetlb.cfg", "# Reserve CMA for 1G hugepages on the web servers.\n"+hugetlbCMA)
	head := r.Commit("reserve CMA for hugepages")
	p := planGate(t, r, base, head, hosts)

	want := []string{
		"newly failing gpu-a-[001-002],gpu-l-001: +hugetlb-cma-on-gpu/critical",
		"newly failing gpu-b-001: +hugetlb-cma-on-gpu/high",
		"newly failing gpu-c-001: +hugetlb-cma-on-gpu/high",
	}
	if diff := cmp.Diff(want, outcomes(p, "gpu-training")); diff != "" {
		t.Errorf("gpu-training plan (-want +got):\n%s", diff)
	}
	// Rocky's GRUB with BLS entries: the defaults reach the entries at the
	// next kernel install, which the rule reports as planted; the default
	// entry and the defaults already differed (iommu=pt), and now differ
	// in hugetlb_cma too, a different boot-entry-divergent finding.
	rocky := outcomes(p, "gpu-rocky")
	if diff := cmp.Diff([]string{"newly failing gpu-r-001: +hugetlb-cma-on-gpu/critical +boot-entry-divergent/medium -boot-entry-divergent/medium"}, rocky); diff != "" {
		t.Errorf("gpu-rocky plan (-want +got):\n%s", diff)
	}
	for _, f := range p.Fleets {
		if f.Fleet == "gpu-rocky" && len(f.NewlyFailing) == 1 {
			if m := f.NewlyFailing[0].Introduced[0].Message; !strings.Contains(m, "next kernel install") {
				t.Errorf("gpu-r-001: %q, want the finding planted for the next kernel install", m)
			}
		}
	}
	if diff := cmp.Diff([]string{"unchanged web-01:"}, outcomes(p, "web-serving")); diff != "" {
		t.Errorf("web-serving plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db-01 no-fleet", "gpu-s-001 stale", "gpu-u-001 unread"}, notPlanned(p)); diff != "" {
		t.Errorf("not planned (-want +got):\n%s", diff)
	}
	for _, f := range p.Fleets {
		for _, g := range f.NewlyFailing {
			for _, i := range g.Introduced {
				if i.Rule == "hugetlb-cma-on-gpu" && !slices.Contains(i.Sources, "layers/base/etc/default/grub.d/60-hugetlb.cfg:2") {
					t.Errorf("%v: %s cites %v, want the repo file and line", g.Hosts, i.Rule, i.Sources)
				}
			}
		}
	}
	wantSum := PlanSummary{Hosts: 10, Planned: 7, NewlyFailing: 6, Unchanged: 1, NotPlanned: 3,
		NewlyFailingBy: []FleetSeverityHosts{{"gpu-rocky", "critical", 1}, {"gpu-training", "critical", 3}, {"gpu-training", "high", 2}}}
	if diff := cmp.Diff(wantSum, p.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// A sysctl change reaches every GPU host but the one whose own
// /etc/sysctl.d/99-local.conf sets the key: 99-local.conf sorts after
// 60-gpu-training.conf, and sysctl.d(5) applies the last setting. The
// plan names that file as what overrides the change.
func TestPlanSysctlChangeOverriddenByAHostFile(t *testing.T) {
	r := planRepo(t)
	base := r.Git("rev-parse", "HEAD")
	hosts := recordFixtures(t, r, base)
	const conf = "layers/gpu/etc/sysctl.d/60-gpu-training.conf"
	r.Write(conf, strings.Replace(r.Read(conf), "vm.max_map_count = 262144", "vm.max_map_count = 65530", 1))
	head := r.Commit("lower max_map_count")
	p := planGate(t, r, base, head, hosts)

	want := []string{
		"newly failing gpu-a-[001-002],gpu-b-001,gpu-c-001: +max-map-count-low/low",
		"unchanged gpu-l-001:",
	}
	if diff := cmp.Diff(want, outcomes(p, "gpu-training")); diff != "" {
		t.Errorf("gpu-training plan (-want +got):\n%s", diff)
	}
	var over []Override
	for _, f := range p.Fleets {
		for _, g := range f.Unchanged {
			if slices.Contains(g.Hosts, "gpu-l-001") {
				over = g.Overridden
			}
		}
	}
	wantOver := []Override{{Fact: "sysctl.configured.vm.max_map_count", Repo: conf + ":8", By: "/etc/sysctl.d/99-local.conf:2", Value: "1048576"}}
	if diff := cmp.Diff(wantOver, over); diff != "" {
		t.Errorf("gpu-l-001 overrides (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"newly failing gpu-r-001: +max-map-count-low/low"}, outcomes(p, "gpu-rocky")); diff != "" {
		t.Errorf("gpu-rocky plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"unchanged web-01:"}, outcomes(p, "web-serving")); diff != "" {
		t.Errorf("web-serving plan (-want +got):\n%s", diff)
	}
}

// TestRolledOutMatchesTheRolledOutRoot: the host files written back from a
// snapshot, with the repo's files over them, read as the real root after
// the rollout reads: the same configured sysctls, effective limits and
// RemoveIPC, where host-local files override the repo's and the repo's
// override host files of its own paths.
func TestRolledOutMatchesTheRolledOutRoot(t *testing.T) {
	r := planRepo(t)
	base := r.Git("rev-parse", "HEAD")
	local := map[string]string{
		"etc/sysctl.d/99-local.conf":              "vm.max_map_count = 1048576\n\n# and\nvm.swappiness = 1\n",
		"etc/sysctl.d/05-early.conf":              "vm.max_map_count = 77\nkernel.panic = 3\n",
		"etc/security/limits.d/99-local.conf":     "*  soft  nofile  4096\n@hpc  hard  nofile  8192\n",
		"etc/systemd/logind.conf.d/99-local.conf": "[Login]\nRemoveIPC=yes\n",
	}
	// The host before: gpu-node with base deployed and its local files.
	before := filepath.Join(t.TempDir(), "before")
	if err := os.CopyFS(before, os.DirFS("../testdata/hosts/gpu-node")); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, base, "gpu-training", before)
	for p, c := range local {
		write(t, filepath.Join(before, p), c)
	}
	collect := func(root string) map[string]any {
		target, err := collectors.Local(root, collectors.LocalOptions{NoExec: true})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := collectors.Collect(context.Background(), target, collectors.Options{Hostname: "h", LimitsDomains: []string{"@hpc"}})
		if err != nil {
			t.Fatal(err)
		}
		doc, err := snapshot.Document(snap)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	hostDoc := collect(before)

	// The change: the repo sets kernel.panic and nofile, drops swappiness
	// from nowhere, and RemoveIPC stays in its file.
	const conf = "layers/gpu/etc/sysctl.d/60-gpu-training.conf"
	r.Write(conf, r.Read(conf)+"kernel.panic = 20\n")
	r.Write("layers/gpu/etc/security/limits.d/95-nofile.conf", "* soft nofile 65536\n* hard nofile 65536\n")
	head := r.Commit("panic and nofile")

	// The truth: the host's root after the rollout of head.
	after := filepath.Join(t.TempDir(), "after")
	if err := os.CopyFS(after, os.DirFS(before)); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, head, "gpu-training", after)
	want := collect(after)

	got := rollOutHead(t, r.Dir, head, "gpu-training", hostDoc, map[string]bool{})
	for _, fact := range []string{"sysctl.configured", "limits.effective", "logind.remove_ipc"} {
		w, _ := snapshot.Lookup(want, fact)
		g, _ := snapshot.Lookup(got, fact)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s (-rolled-out root +rolled-out snapshot):\n%s", fact, diff)
		}
	}
	// Provenance: a host file keeps its path and line, a repo file is named
	// by its layer.
	src := asMap(got["sources"])
	for fact, at := range map[string]string{
		"sysctl.configured.vm.max_map_count": "/etc/sysctl.d/99-local.conf:1",
		"sysctl.configured.vm.swappiness":    "/etc/sysctl.d/99-local.conf:4",
		"sysctl.configured.kernel.panic":     conf + ":10",
		"sysctl.running.kernel.panic":        conf + ":10",
		"logind.remove_ipc":                  "/etc/systemd/logind.conf.d/99-local.conf:2",
	} {
		if src[fact] != at {
			t.Errorf("%s from %v, want %s", fact, src[fact], at)
		}
	}
}

// rollOutHead is hostDoc rolled out with fleet's files as head renders them.
func rollOutHead(t *testing.T, dir, head, fleet string, hostDoc map[string]any, fed map[string]bool) map[string]any {
	t.Helper()
	co, err := CheckoutRef(context.Background(), dir, head)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseManifest(co.Files[ManifestFile].Data)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := Render(context.Background(), co, m, fleet, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, layers, err := renderedFiles(rendered)
	if err != nil {
		t.Fatal(err)
	}
	managed := map[string]bool{}
	for p := range rendered.Digests {
		managed[p] = true
	}
	got, err := rolledOut(context.Background(), hostDoc, "h", files, layers, managed, fed, "")
	if err != nil {
		t.Fatal(err)
	}
	return got
}
