package collectors

import (
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

func TestKernelBool(t *testing.T) {
	tests := []struct {
		in       string
		want, ok bool
	}{
		{"1", true, true}, {"y", true, true}, {"Yes", true, true}, {"on", true, true}, {"ON", true, true},
		{"0", false, true}, {"n", false, true}, {"off", false, true}, {"OFF", false, true},
		{"", false, false}, {"o", false, false}, {"true", false, false}, {"2", false, false},
	}
	for _, tt := range tests {
		got, ok := kernelBool(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("kernelBool(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCmdlinePassthrough(t *testing.T) {
	tests := []struct {
		name     string
		params   []string
		pt, set  bool
		badParam []string
	}{
		{name: "none"},
		{name: "iommu=pt", params: []string{"iommu=pt"}, pt: true, set: true},
		{name: "in a list", params: []string{"iommu=force,pt"}, pt: true, set: true},
		{name: "nopt", params: []string{"iommu=nopt"}, pt: false, set: true},
		{name: "other iommu options", params: []string{"iommu=force"}},
		{name: "iommu.passthrough=1", params: []string{"iommu.passthrough=1"}, pt: true, set: true},
		{name: "iommu.passthrough=off", params: []string{"iommu.passthrough=off"}, pt: false, set: true},
		{name: "last wins", params: []string{"iommu=pt", "iommu.passthrough=0"}, pt: false, set: true},
		{name: "last wins the other way", params: []string{"iommu.passthrough=0", "iommu=pt"}, pt: true, set: true},
		{name: "rejected value", params: []string{"iommu=pt", "iommu.passthrough=maybe"}, pt: true, set: true, badParam: []string{"iommu.passthrough=maybe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt, set, bad := cmdlinePassthrough(tt.params)
			if pt != tt.pt || set != tt.set {
				t.Errorf("= %v, %v; want %v, %v", pt, set, tt.pt, tt.set)
			}
			if diff := cmp.Diff(tt.badParam, bad); diff != "" {
				t.Errorf("bad (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCPUInfoFlagLine(t *testing.T) {
	cpuinfo := "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme hypervisor lahf_lm\nbugs\t\t: hypervisor_like\n\nprocessor\t: 1\nflags\t\t: fpu vme hypervisor\n"
	if got := cpuinfoFlagLine([]byte(cpuinfo), "hypervisor"); got != 3 {
		t.Errorf("line = %d, want 3", got)
	}
	if got := cpuinfoFlagLine([]byte(cpuinfo), "hyper"); got != 0 {
		t.Errorf("a prefix matched at line %d", got)
	}
	arm := "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull\n"
	if got := cpuinfoFlagLine([]byte(arm), "hypervisor"); got != 0 {
		t.Errorf("arm64 line = %d, want 0", got)
	}
}

func TestCollectIOMMU(t *testing.T) {
	units := map[string]string{
		"sys/devices/virtual/iommu/dmar0/intel-iommu/version": "1:0\n",
		"sys/class/iommu/dmar0":                               "-> ../../devices/virtual/iommu/dmar0",
	}
	tests := []struct {
		name     string
		files    map[string]string
		cmdline  string
		want     snapshot.IOMMU
		evidence string
		errs     int
	}{
		{
			name:     "groups beat the cmdline",
			files:    map[string]string{"sys/kernel/iommu_groups/0/type": "DMA-FQ\n", "sys/kernel/iommu_groups/1/type": "DMA\n", "sys/kernel/iommu_groups/2/type": "identity\n"},
			cmdline:  "BOOT_IMAGE=/vmlinuz ro iommu=pt",
			want:     snapshot.IOMMU{Enabled: true, Units: []string{"dmar0"}, PassthroughEvidence: "iommu_groups", GroupTypes: map[string]int{"DMA": 1, "DMA-FQ": 1, "identity": 1}},
			evidence: "/sys/kernel/iommu_groups",
		},
		{
			name:     "passthrough groups with one device the kernel keeps translated",
			files:    map[string]string{"sys/kernel/iommu_groups/0/type": "identity\n", "sys/kernel/iommu_groups/1/type": "identity\n", "sys/kernel/iommu_groups/2/type": "DMA\n", "sys/kernel/iommu_groups/3/type": "unmanaged\n"},
			want:     snapshot.IOMMU{Enabled: true, Units: []string{"dmar0"}, Passthrough: true, PassthroughEvidence: "iommu_groups", GroupTypes: map[string]int{"DMA": 1, "identity": 2, "unmanaged": 1}},
			evidence: "/sys/kernel/iommu_groups",
		},
		{
			name:     "cmdline when groups are absent",
			cmdline:  "ro intel_iommu=on iommu=pt quiet",
			want:     snapshot.IOMMU{Enabled: true, Units: []string{"dmar0"}, Passthrough: true, PassthroughEvidence: "cmdline", GroupTypes: map[string]int{}},
			evidence: "/proc/cmdline",
		},
		{
			name:     "only vfio groups say nothing",
			files:    map[string]string{"sys/kernel/iommu_groups/5/type": "unmanaged\n"},
			cmdline:  "iommu.passthrough=0",
			want:     snapshot.IOMMU{Enabled: true, Units: []string{"dmar0"}, PassthroughEvidence: "cmdline", GroupTypes: map[string]int{"unmanaged": 1}},
			evidence: "/proc/cmdline",
		},
		{
			name:     "nothing known",
			cmdline:  "ro iommu.passthrough=maybe",
			want:     snapshot.IOMMU{Enabled: true, Units: []string{"dmar0"}, GroupTypes: map[string]int{}},
			evidence: "default: no IOMMU group types and no iommu=pt or iommu.passthrough= on the running cmdline",
			errs:     1,
		},
		{
			name:     "Xen guest",
			files:    map[string]string{"sys/hypervisor/type": "xen\n"},
			want:     snapshot.IOMMU{Enabled: true, Units: []string{"dmar0"}, GroupTypes: map[string]int{}, Hypervisor: true},
			evidence: "default: no IOMMU group types and no iommu=pt or iommu.passthrough= on the running cmdline",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			hwWriteTree(t, dir, units)
			hwWriteTree(t, dir, tt.files)
			c := hwTestCollection(dir)
			c.snap.Boot.Running.Cmdline = tt.cmdline
			collectIOMMU(c)
			if diff := cmp.Diff(tt.want, c.snap.IOMMU); diff != "" {
				t.Errorf("iommu (-want +got):\n%s", diff)
			}
			if got := c.snap.Sources["iommu.passthrough"].String(); got != tt.evidence {
				t.Errorf("passthrough source = %q, want %q", got, tt.evidence)
			}
			if len(c.snap.Errors) != tt.errs {
				t.Errorf("errors = %v, want %d", c.snap.Errors, tt.errs)
			}
			for _, e := range c.snap.Errors {
				if e.Collector != "iommu" || !strings.Contains(e.Reason, "iommu.passthrough=maybe") {
					t.Errorf("unexpected error %+v", e)
				}
			}
		})
	}
}

// The params map is the fallback when a boot collector kept no raw cmdline.
func TestRunningIOMMUParamsFromMap(t *testing.T) {
	c := hwTestCollection(t.TempDir())
	c.snap.Boot.Running.Params = map[string]string{"iommu.passthrough": "1", "quiet": ""}
	if diff := cmp.Diff([]string{"iommu.passthrough=1"}, runningIOMMUParams(c)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
