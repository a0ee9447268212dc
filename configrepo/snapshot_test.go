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
		{Collector: "limits", Path: "layers/gpu/etc/security/limits.conf", Reason: `parse error: line 2: want "<domain> <type> <item> <value>", got 2 field(s)`},
		{Collector: "logind", Path: "layers/base/etc/systemd/logind.conf", Reason: "layers/base/etc/systemd/logind.conf: file exceeds the size cap (1048576 bytes)"},
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
