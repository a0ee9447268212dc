package configrepo

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// rollOutBoth is a gpu-node host with base deployed and its local files,
// collected; then the change applied by change and committed, deployed on
// a copy of the host (the truth, want) and laid over the host's snapshot
// (got), with fed the sections the repo's files feed.
func rollOutBoth(t *testing.T, local map[string]string, change func(r *gitRepo), fed map[string]bool) (want, got map[string]any) {
	t.Helper()
	r := planRepo(t)
	base := r.Git("rev-parse", "HEAD")
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
		snap, err := collectors.Collect(context.Background(), target, collectors.Options{Hostname: "h"})
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
	change(r)
	head := r.Commit("the change")
	after := filepath.Join(t.TempDir(), "after")
	if err := os.CopyFS(after, os.DirFS(before)); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, head, "gpu-training", after)
	want = collect(after)

	got = rollOutHead(t, r.Dir, head, "gpu-training", hostDoc, fed)
	return want, got
}

// A repo that renders a modprobe.d file keeps the host's own blacklist,
// install and modules-load lines: kmod and systemd-modules-load read them
// with the repo's, in file-name order across /etc, /run and /usr/lib (a
// repo file masks a host file of its name in /usr/lib), first line wins.
func TestRolledOutStacksHostModules(t *testing.T) {
	local := map[string]string{
		"etc/modprobe.d/99-local.conf":     "# this host has no use for them\nblacklist nouveau\ninstall rdma_ucm /bin/false\nblacklist floppy\n",
		"usr/lib/modprobe.d/50-gpu.conf":   "blacklist nvidiafb\n",
		"etc/modules-load.d/20-local.conf": "# local\nib_umad\n",
	}
	want, got := rollOutBoth(t, local, func(r *gitRepo) {
		r.Write("layers/gpu/etc/modprobe.d/50-gpu.conf", "blacklist nouveau\ninstall rdma_ucm /bin/true\n")
		r.Write("layers/gpu/etc/modules-load.d/70-gpu.conf", "nvidia_uvm\n")
	}, map[string]bool{"modules": true})
	for _, fact := range []string{"modules.configured", "modules.blacklisted", "modules.install"} {
		w, _ := snapshot.Lookup(want, fact)
		g, _ := snapshot.Lookup(got, fact)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s (-rolled-out root +rolled-out snapshot):\n%s", fact, diff)
		}
	}
	src := asMap(got["sources"])
	for fact, at := range map[string]string{
		"modules.blacklisted.floppy":    "/etc/modprobe.d/99-local.conf:4",
		"modules.blacklisted.nouveau":   "layers/gpu/etc/modprobe.d/50-gpu.conf:1",
		"modules.install.rdma_ucm":      "layers/gpu/etc/modprobe.d/50-gpu.conf:2",
		"modules.configured.ib_umad":    "/etc/modules-load.d/20-local.conf:2",
		"modules.configured.nvidia_uvm": "layers/gpu/etc/modules-load.d/70-gpu.conf:1",
	} {
		if src[fact] != at {
			t.Errorf("%s from %v, want %s", fact, src[fact], at)
		}
	}
	if b, _ := snapshot.Lookup(got, "modules.blacklisted.nvidiafb"); b != nil {
		t.Errorf("nvidiafb blacklisted by a host file the repo's 50-gpu.conf masks")
	}
}

// A host's own grub.d file is not stacked under the repo's grub.d: the
// plan names it on that host's group, never a silent "unchanged", and on
// no other host.
func TestPlanNamesHostFilesItDoesNotStack(t *testing.T) {
	r := planRepo(t)
	base := r.Git("rev-parse", "HEAD")
	const local = "/etc/default/grub.d/99-local.cfg"
	hosts := recordHosts(t, r, base, []fixtureHost{
		{name: "gpu-a-001", from: "gpu-node", fleet: "gpu-training"},
		{name: "gpu-g-001", from: "gpu-node", fleet: "gpu-training", files: map[string]string{
			local[1:]: "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT intel_idle.max_cstate=1\"\n",
		}},
	})
	r.Write("layers/base/etc/sysctl.d/10-base.conf", "kernel.panic = 20\n")
	head := r.Commit("panic later")
	p := planGate(t, r, base, head, hosts)
	got := map[string][]string{}
	for _, f := range p.Fleets {
		for _, gs := range [][]HostGroup{f.NewlyFailing, f.Fixed, f.Unchanged} {
			for _, g := range gs {
				for _, h := range g.Hosts {
					got[h] = g.NotStacked
				}
			}
		}
	}
	want := map[string][]string{"gpu-a-001": nil, "gpu-g-001": {local}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("host files not stacked (-want +got):\n%s", diff)
	}
}

// Hosts of a snapshot directory are put in fleets by the profiles, which
// match host names: two hosts whose snapshots differ only in their names
// are rolled out once, but each is matched on its own name.
func TestPlanMatchesEachHostByItsOwnName(t *testing.T) {
	r := planRepo(t)
	base := r.Git("rev-parse", "HEAD")
	hosts := recordHosts(t, r, base, []fixtureHost{
		{name: "web-01", from: "web-node", fleet: "web-serving"},
		{name: "db-01", from: "web-node", fleet: "web-serving"},
		{name: "web-02", from: "web-node", fleet: "web-serving"},
	})
	root := regexp.MustCompile(`"root":"[^"]*"`)
	for i := range hosts {
		hosts[i].Fleet = "" // as --snapshots reads them
		raw, err := hosts[i].Read(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// As collected over SSH: one source for every host.
		raw = root.ReplaceAll(raw, []byte(`"root":"/"`))
		hosts[i].Read = func(context.Context, []byte) ([]byte, error) { return raw, nil }
	}
	r.Write("layers/web/etc/sysctl.d/60-net.conf", "net.core.somaxconn = 1024\n")
	head := r.Commit("lower somaxconn")
	p := planGate(t, r, base, head, hosts)
	if diff := cmp.Diff([]string{"newly failing web-[01-02]: +somaxconn-low/medium"}, outcomes(p, "web-serving")); diff != "" {
		t.Errorf("web-serving plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db-01 no-fleet"}, notPlanned(p)); diff != "" {
		t.Errorf("not planned (-want +got):\n%s", diff)
	}
	if s := p.Summary; s.Planned+s.NotPlanned != s.Hosts || s.Hosts != 3 {
		t.Errorf("summary %+v: planned and not planned are not the hosts read", s)
	}
}

// sysctl.d across /etc, /run and /usr/lib: one order by file name, a file
// in /etc masking one of its name in /run or /usr/lib, the repo's file
// masking the host's package file of its name; limits.d and logind.conf.d
// drop-ins beside the repo's. The rolled-out snapshot reads as the root.
func TestRolledOutStacksAcrossDirectories(t *testing.T) {
	local := map[string]string{
		"usr/lib/sysctl.d/50-default.conf":             "kernel.panic = 1\nnet.core.somaxconn = 100\nvm.swappiness = 30\n",
		"run/sysctl.d/55-run.conf":                     "net.core.somaxconn = 200\n",
		"usr/lib/sysctl.d/60-gpu-training.conf":        "vm.dirty_ratio = 5\n",
		"run/sysctl.d/70-late.conf":                    "kernel.panic = 7\n",
		"etc/sysctl.d/70-late.conf":                    "vm.swappiness = 10\n",
		"etc/security/limits.d/95-local.conf":          "* soft memlock 1024\n",
		"etc/systemd/logind.conf.d/05-early.conf":      "[Login]\nRemoveIPC=yes\n",
		"usr/lib/systemd/logind.conf.d/99-vendor.conf": "[Login]\nKillUserProcesses=no\n",
	}
	want, got := rollOutBoth(t, local, func(r *gitRepo) {
		const conf = "layers/gpu/etc/sysctl.d/60-gpu-training.conf"
		r.Write(conf, r.Read(conf)+"net.core.somaxconn = 4096\nkernel.panic = 5\n")
		r.Write("layers/gpu/etc/security/limits.d/96-memlock.conf", "* soft memlock unlimited\n* hard memlock unlimited\n")
	}, map[string]bool{})
	for _, fact := range []string{"sysctl.configured", "limits.effective", "logind.remove_ipc"} {
		w, _ := snapshot.Lookup(want, fact)
		g, _ := snapshot.Lookup(got, fact)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s (-rolled-out root +rolled-out snapshot):\n%s", fact, diff)
		}
	}
	src := asMap(got["sources"])
	for fact, at := range map[string]string{
		"sysctl.configured.net.core.somaxconn": "layers/gpu/etc/sysctl.d/60-gpu-training.conf:10",
		"sysctl.configured.vm.swappiness":      "/etc/sysctl.d/70-late.conf:1",
	} {
		if src[fact] != at {
			t.Errorf("%s from %v, want %s", fact, src[fact], at)
		}
	}
}

// A key the repo's file set on the host, over a host file's setting of it,
// comes back from that host file when the repo stops setting it; the
// snapshot does not hold that value, so the plan says the key is taken as
// unset on every host that had it from the repo's file (the snapshot cannot
// tell which have a file beneath), never on one whose own file won.
func TestPlanSaysWhichKeysItTakesAsUnset(t *testing.T) {
	r := planRepo(t)
	base := r.Git("rev-parse", "HEAD")
	hosts := recordHosts(t, r, base, []fixtureHost{
		{name: "gpu-a-001", from: "gpu-node", fleet: "gpu-training"},
		{name: "gpu-h-001", from: "gpu-node", fleet: "gpu-training", files: map[string]string{
			"etc/sysctl.d/05-local.conf": "kernel.panic = 60\n",
		}},
		{name: "gpu-k-001", from: "gpu-node", fleet: "gpu-training", files: map[string]string{
			"etc/sysctl.d/99-local.conf": "kernel.panic = 30\n",
		}},
	})
	r.Write("layers/base/etc/sysctl.d/10-base.conf", "# kernel.panic: the distribution's\n")
	head := r.Commit("leave kernel.panic to the hosts")
	p := planGate(t, r, base, head, hosts)
	got := map[string][]string{}
	for _, f := range p.Fleets {
		for _, gs := range [][]HostGroup{f.NewlyFailing, f.Fixed, f.Unchanged} {
			for _, g := range gs {
				for _, h := range g.Hosts {
					got[h] = g.Unset
				}
			}
		}
	}
	want := map[string][]string{"gpu-a-001": {"sysctl.configured.kernel.panic"}, "gpu-h-001": {"sysctl.configured.kernel.panic"}, "gpu-k-001": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys taken as unset (-want +got):\n%s", diff)
	}
}

// A module the repo's modules-load.d file loads is recorded at that file
// (the first to name it wins), so a host file that names it too is not in
// the snapshot: when the repo stops loading it, the plan says it takes the
// module as not loaded at boot.
func TestPlanSaysWhichModulesItTakesAsUnset(t *testing.T) {
	r := planRepo(t)
	r.Write("layers/gpu/etc/modules-load.d/10-gpu.conf", "nvidia_peermem\n")
	base := r.Commit("load peermem from the repo")
	// gpu-node's own /etc/modules-load.d/nvidia-peermem.conf loads it too.
	hosts := recordHosts(t, r, base, []fixtureHost{{name: "gpu-a-001", from: "gpu-node", fleet: "gpu-training"}})
	r.Write("layers/gpu/etc/modules-load.d/10-gpu.conf", "# the driver package loads it\n")
	head := r.Commit("leave peermem to the hosts")
	p := planGate(t, r, base, head, hosts)
	var got []string
	for _, f := range p.Fleets {
		for _, gs := range [][]HostGroup{f.NewlyFailing, f.Fixed, f.Unchanged} {
			for _, g := range gs {
				got = append(got, g.Unset...)
			}
		}
	}
	if diff := cmp.Diff([]string{"modules.configured.nvidia_peermem"}, got); diff != "" {
		t.Errorf("taken as unset (-want +got):\n%s", diff)
	}
}
