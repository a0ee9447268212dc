package snapshot

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every running-state path names something a snapshot holds.
func TestRunningStatePathsExist(t *testing.T) {
	for _, p := range RunningState {
		if err := CheckFactPath(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for path, want := range map[string]bool{
		"boot.running.params.hugetlb_cma":    true,
		"boot.configured.params.hugetlb_cma": false,
		"services.units.slurmd.running_pid":  true,
		"services.units.slurmd.memlock":      false,
		"sysctl.running.vm.max_map_count":    true,
		"sysctl.configured.vm.max_map_count": false,
		"memory":                             true,
		"nvidia.fabric_manager":              false,
		"modules.loaded":                     true,
		"source.image":                       false,
		"kernel.release":                     true,
		"kernel.installed":                   false,
		"kernel.boot_release":                false,
	} {
		if got := IsRunningState(path); got != want {
			t.Errorf("IsRunningState(%s) = %v, want %v", path, got, want)
		}
	}
}

// An image's snapshot leaves its running state out, in the file and in the
// document alike, and reads back to the same document.
func TestImageSnapshotLeavesRunningStateOut(t *testing.T) {
	s := New("img")
	s.Source = Origin{Kind: "local", Root: "/img", Image: true}
	s.Services.Units = map[string]ServiceUnit{"slurmd.service": {File: "/lib/systemd/system/slurmd.service", RunningPID: 7}}
	s.Sysctl.Configured = map[string]string{"kernel.pid_max": "4194304"}
	s.Kernel = Kernel{Release: "6.1.0-18-amd64", Installed: []string{"5.10.0-28-amd64", "6.1.0-18-amd64"}, BootRelease: "6.1.0-18-amd64"}
	s.Normalize()
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	fromFile, err := DecodeDocument(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Document(s)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromFile, doc); d != "" {
		t.Errorf("document differs from the file (-file +document):\n%s", d)
	}
	for _, p := range []string{"boot.running", "sysctl.running", "sysctl.missing", "memory", "kernel.release", "kernel.version", "kernel.arch", "modules.loaded", "nvidia.gpus", "services.units.slurmd.service.running_pid"} {
		if v, ok := Lookup(doc, p); ok {
			t.Errorf("%s written for an image: %v", p, v)
		}
	}
	// An image's installed kernels are files of it, not running state.
	for _, p := range []string{"sysctl.configured.kernel.pid_max", "services.units.slurmd.service.file", "source.image", "boot.configured", "kernel.installed", "kernel.boot_release"} {
		if _, ok := Lookup(doc, p); !ok {
			t.Errorf("%s left out", p)
		}
	}
	back, err := DecodeBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := Encode(&again, back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(buf.String(), again.String()); d != "" {
		t.Errorf("re-encoding changed the image snapshot:\n%s", d)
	}
}
