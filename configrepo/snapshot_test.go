package configrepo

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetaudit/fleetaudit/collectors"
	"github.com/fleetaudit/fleetaudit/snapshot"
)

// TestRenderedFleetNamesRepoFiles: facts, limits entries, error paths and
// error reasons of a rendered fleet name the repo file (its layer) that
// set them, through the overlay's Describe, never the rendered path. Before,
// a rewrite of source strings after collection missed limits entries and
// the file an ld.so.conf "includes itself" message names.
func TestRenderedFleetNamesRepoFiles(t *testing.T) {
	co := checkoutOf(map[string]string{
		"layers/base/etc/sysctl.d/10-a.conf":     "vm.swappiness = 10\n",
		"layers/gpu/etc/sysctl.d/10-a.conf":      "vm.swappiness = 1\n",
		"layers/gpu/etc/security/limits.conf":    "* soft memlock unlimited\n* bogus\n",
		"layers/base/etc/systemd/logind.conf":    strings.Repeat("#", collectors.DefaultMaxFileSize+1),
		"layers/base/etc/default/grub":           "GRUB_CMDLINE_LINUX=\"quiet\"\n",
		"layers/gpu/etc/ld.so.conf":              "include /etc/ld.so.conf\n",
		"layers/gpu/etc/default/grub.d/60-x.cfg": "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX hugepages=4\"\n",
	})
	m := &Manifest{Fleets: map[string]*Fleet{"gpu": {Layers: []string{"base", "gpu"}}}}
	r, err := Render(context.Background(), co, m, "gpu", RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := collectors.Collect(context.Background(), r.Target(co), collectors.Options{Hostname: "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Source.Kind != SourceKind || snap.Source.Root != co.Label() {
		t.Errorf("source = %+v", snap.Source)
	}
	gpuLimits := snapshot.Provenance{Layer: "gpu", File: "/etc/security/limits.conf", Line: 1}
	for fact, want := range map[string]snapshot.Provenance{
		"sysctl.configured.vm.swappiness":  {Layer: "gpu", File: "/etc/sysctl.d/10-a.conf", Line: 1},
		"limits.effective.*.memlock.soft":  gpuLimits,
		"boot.configured.params.hugepages": {Layer: "gpu", File: "/etc/default/grub.d/60-x.cfg", Line: 1},
		"boot.configured.params.quiet":     {Layer: "base", File: "/etc/default/grub", Line: 1},
	} {
		if got := snap.Sources[fact]; !cmp.Equal(want, got) {
			t.Errorf("sources[%s] = %q %+v, want %q", fact, got, got, want)
		}
	}
	if got := snap.Sources["sysctl.configured.vm.swappiness"].String(); got != "layers/gpu/etc/sysctl.d/10-a.conf:1" {
		t.Errorf("swappiness source text = %q", got)
	}
	if len(snap.Limits.Entries) != 1 || !cmp.Equal(snap.Limits.Entries[0].Source, gpuLimits) {
		t.Errorf("limits entries = %+v, want one from %s", snap.Limits.Entries, gpuLimits)
	}
	var errs []snapshot.CollectionError
	for _, e := range snap.Errors {
		if e.Collector == "limits" || e.Collector == "logind" || e.Collector == "libraries" {
			errs = append(errs, e)
		}
	}
	want := []snapshot.CollectionError{
		{Collector: "libraries", Path: "layers/gpu/etc/ld.so.conf", Reason: "parse error: line 1: layers/gpu/etc/ld.so.conf includes itself"},
		{Collector: "limits", Path: "layers/gpu/etc/security/limits.conf", Reason: `parse error: line 2: want "<domain> <type> <item> <value>", got 2 field(s)`, Skipped: true},
		{Collector: "logind", Path: "layers/base/etc/systemd/logind.conf", Reason: "layers/base/etc/systemd/logind.conf: file exceeds the size cap (1048576 bytes)"},
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// The gate collects a rendered fleet with the host's readers: a line
// systemd-sysctl, logind, systemd-modules-load, kmod or systemd's unit
// parser skips is a skipped error naming the repo file, and the facts are
// what those readers apply.
func TestRenderedReaderSkippedLines(t *testing.T) {
	co := checkoutOf(map[string]string{
		"layers/gpu/etc/sysctl.d/60-a.conf":                           "vm.swappiness 1\nvm.swappiness = 1\n",
		"layers/gpu/etc/systemd/logind.conf.d/10-hpc.conf":            "[Login]\nRemoveIPC\nRemoveIPC=no\n",
		"layers/gpu/etc/modules-load.d/peermem.conf":                  "nvidia peermem\nnvidia-peermem\n",
		"layers/gpu/etc/modprobe.d/peermem.conf":                      "blacklist\nblacklist nv_peer_mem\n",
		"layers/gpu/usr/lib/systemd/system/slurmd.service":            "[Service]\nExecStart=/usr/sbin/slurmd\n",
		"layers/gpu/etc/systemd/system/slurmd.service.d/memlock.conf": "[Service]\nLimitMEMLOCK=infinity\nLimitMEMLOCK=\n",
	})
	m := &Manifest{Fleets: map[string]*Fleet{"gpu": {Layers: []string{"gpu"}}}}
	r, err := Render(context.Background(), co, m, "gpu", RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := collectors.Collect(context.Background(), r.Target(co), collectors.Options{Hostname: "gpu", ConfigOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Sysctl.Configured["vm.swappiness"] != "1" || snap.Logind.RemoveIPC != "no" ||
		!snap.Modules.Configured["nvidia_peermem"] || !snap.Modules.Blacklisted["nv_peer_mem"] {
		t.Errorf("facts: sysctl %v, logind %+v, modules %+v", snap.Sysctl.Configured, snap.Logind, snap.Modules)
	}
	if u := snap.Services.Units["slurmd.service"]; u.Memlock == nil || u.Memlock.Soft != "unlimited" {
		t.Errorf("slurmd memlock %+v, want infinity (an empty LimitMEMLOCK= is ignored)", u.Memlock)
	}
	got := map[string]bool{}
	for _, e := range snap.Errors {
		if strings.HasPrefix(e.Path, "layers/") {
			got[e.Path+strings.SplitN(e.Reason, ":", 3)[1]] = e.Skipped
		}
	}
	want := map[string]bool{
		"layers/gpu/etc/sysctl.d/60-a.conf line 1":                           true,
		"layers/gpu/etc/systemd/logind.conf.d/10-hpc.conf line 2":            true,
		"layers/gpu/etc/modules-load.d/peermem.conf line 1":                  true,
		"layers/gpu/etc/modprobe.d/peermem.conf line 1":                      true,
		"layers/gpu/etc/systemd/system/slurmd.service.d/memlock.conf line 3": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (path line: skipped) (-want +got):\n%s", diff)
	}
}

// withBaseline answers what a repo cannot know from the baseline without
// changing either document, names the baseline in typed provenance (its
// text as the gate has always printed it), keeps the repo's own facts
// where it has them, and carries a baseline member removed for its type
// into the errors, so no rule reads that fact from either side.
func TestWithBaseline(t *testing.T) {
	decode := func(s string) map[string]any {
		t.Helper()
		doc, err := snapshot.DecodeDocument([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	const repo = `{"schema":"fleetaudit.snapshot/v1","host":"gpu","labels":{"fleet":"gpu"},
		"kernel":{"release":"from-repo"},"os":{"id":""},
		"logind":{"remove_ipc":"yes","remove_ipc_default":true},
		"sysctl":{"running":{"vm.swappiness":"1"},"configured":{"vm.swappiness":"1"}},
		"modules":{"configured":{"nvidia":true}},
		"sources":{"sysctl.running.vm.swappiness":"layers/gpu/etc/sysctl.d/10-a.conf:1"},"errors":[]}`
	const baseline = `{"schema":"fleetaudit.snapshot/v1","host":"gpu-a-001","labels":{"rack":"r1","fleet":"other"},
		"kernel":{"release":"6.8.0","arch":7},"nvidia":{"present":true,"driver_version":"550.90.07"},
		"os":{"id":"ubuntu"},"logind":{"remove_ipc":"no","remove_ipc_default":false,"installed":true},
		"sysctl":{"running":{"vm.swappiness":"60","kernel.numa_balancing":"0"}},
		"modules":{"loaded":["nvidia"]},
		"sources":{"kernel.release":"/proc/sys/kernel/osrelease","nvidia.driver_version":"/proc/driver/nvidia/version:1",
			"logind.remove_ipc":"default: systemd's default","sysctl.running.kernel.numa_balancing":"/proc/sys/kernel/numa_balancing",
			"sysctl.running.vm.swappiness":"/proc/sys/vm/swappiness"},"errors":[]}`
	doc, base := decode(repo), decode(baseline)
	got := withBaseline(doc, base, "baselines/gpu.json")
	if diff := cmp.Diff(decode(repo), doc); diff != "" {
		t.Errorf("the repo's document changed (-before +after):\n%s", diff)
	}
	wantBase := decode(baseline)
	if diff := cmp.Diff(wantBase, base); diff != "" {
		t.Errorf("the baseline's document changed (-before +after):\n%s", diff)
	}
	for fact, want := range map[string]any{
		"kernel.release":                       "6.8.0",
		"nvidia.driver_version":                "550.90.07",
		"os.id":                                "ubuntu",
		"logind.remove_ipc":                    "no",
		"logind.installed":                     true,
		"sysctl.running.vm.swappiness":         "1", // the repo configures it
		"sysctl.running.kernel.numa_balancing": "0",
		"labels.fleet":                         "gpu", // the fleet's labels win
		"labels.rack":                          "r1",
	} {
		if v, _ := snapshot.Lookup(got, fact); v != want {
			t.Errorf("%s = %#v, want %#v", fact, v, want)
		}
	}
	if v, _ := snapshot.Lookup(got, "modules.loaded"); !cmp.Equal(v, []any{"nvidia"}) {
		t.Errorf("modules.loaded = %#v", v)
	}
	if v, _ := snapshot.Lookup(got, "modules.configured"); v == nil {
		t.Error("modules.configured (the repo's) went away")
	}
	sources := got["sources"].(map[string]any)
	wantSources := map[string]string{
		"kernel.release":                       "/proc/sys/kernel/osrelease (baseline baselines/gpu.json)",
		"nvidia.driver_version":                "/proc/driver/nvidia/version:1 (baseline baselines/gpu.json)",
		"logind.remove_ipc":                    "default: systemd's default (baseline baselines/gpu.json)",
		"sysctl.running.kernel.numa_balancing": "/proc/sys/kernel/numa_balancing (baseline baselines/gpu.json)",
		"sysctl.running.vm.swappiness":         "layers/gpu/etc/sysctl.d/10-a.conf:1",
	}
	for fact, want := range wantSources {
		var text string
		switch s := sources[fact].(type) {
		case snapshot.Provenance:
			if s.Baseline != "baselines/gpu.json" {
				t.Errorf("sources[%s] = %+v, want the baseline named", fact, s)
			}
			text = s.String()
		case string:
			text = s
		}
		if text != want {
			t.Errorf("sources[%s] = %q, want %q", fact, text, want)
		}
	}
	wantErrs := []any{map[string]any{"collector": snapshot.CollectorSnapshot, "path": "kernel.arch",
		"reason": "want string, got number in baseline baselines/gpu.json"}}
	if diff := cmp.Diff(wantErrs, got["errors"]); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
