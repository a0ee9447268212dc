package collectors

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/snapshot"
	"github.com/google/go-cmp/cmp"
)

// hwFamilies are the collectors this file covers; errors of others are not
// checked here.
var hwFamilies = []string{"memory", "rdma", "iommu", "pci", "nccl_config", "processes"}

// hwFactPrefixes are the fact paths those families set.
var hwFactPrefixes = []string{"memory.", "rdma.", "iommu.", "pci.", "nccl_config.", "nvidia.persistenced"}

func hwCollectFixture(t *testing.T, root string) *snapshot.Snapshot {
	t.Helper()
	target := Target{Origin: snapshot.Origin{Kind: "local", Root: "/"}, Files: Dir(filepath.Join("..", "testdata", "hosts", root))}
	snap, err := Collect(context.Background(), target, Options{Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// hwErrors lists this file's families' errors as "collector path".
func hwErrors(snap *snapshot.Snapshot) []string {
	var out []string
	for _, e := range snap.Errors {
		if slices.Contains(hwFamilies, e.Collector) {
			out = append(out, e.Collector+" "+e.Path)
		}
	}
	return out
}

// hwCheckSources checks wanted provenance and that every hardware fact in
// Sources resolves in the snapshot.
func hwCheckSources(t *testing.T, snap *snapshot.Snapshot, want map[string]string) {
	t.Helper()
	for fact, src := range want {
		if got := snap.Sources[fact].String(); got != src {
			t.Errorf("source of %s = %q, want %q", fact, got, src)
		}
	}
	doc, err := snapshot.Generic(snap)
	if err != nil {
		t.Fatal(err)
	}
	for fact := range snap.Sources {
		if !slices.ContainsFunc(hwFactPrefixes, func(p string) bool { return strings.HasPrefix(fact, p) }) {
			continue
		}
		if _, ok := snapshot.Lookup(doc, fact); !ok {
			t.Errorf("source key %s does not resolve in the snapshot", fact)
		}
	}
}

func hwCountKinds(p snapshot.PCI) map[string]int {
	kinds := map[string]int{}
	for _, d := range p.Devices {
		kinds[d.Kind]++
	}
	return kinds
}

func TestHardwareFamiliesEndToEnd(t *testing.T) {
	t.Run("gpu-node", func(t *testing.T) {
		snap := hwCollectFixture(t, "gpu-node")
		m := snap.Memory
		if !m.Present || !m.CmaPresent || m.CmaTotalKB != 6291456 || m.CmaFreeKB != 6287104 || m.MemTotalKB != 2113413628 || m.HugepagesizeKB != 2048 || m.TransparentHugepages != "madvise" {
			t.Errorf("memory = %+v", m)
		}
		if len(snap.RDMA.Devices) != 9 || len(snap.RDMA.DevFiles) != 28 {
			t.Errorf("rdma: %d devices, %d dev files", len(snap.RDMA.Devices), len(snap.RDMA.DevFiles))
		}
		wantIB := snapshot.RDMADevice{Driver: "mlx5_core", PCIAddress: "0000:18:00.0", Ports: map[string]snapshot.RDMAPort{
			"1": {State: "ACTIVE", StateCode: 4, LinkLayer: "InfiniBand", Rate: "400 Gb/sec (4X NDR)", RateGbps: 400},
		}}
		if diff := cmp.Diff(wantIB, snap.RDMA.Devices["mlx5_0"]); diff != "" {
			t.Errorf("mlx5_0 (-want +got):\n%s", diff)
		}
		if got := snap.RDMA.Devices["mlx5_8"].Ports["1"].LinkLayer; got != "Ethernet" {
			t.Errorf("mlx5_8 link layer = %q", got)
		}
		wantIOMMU := snapshot.IOMMU{
			Enabled: true, Units: []string{"dmar0", "dmar1", "dmar2", "dmar3", "dmar4", "dmar5", "dmar6", "dmar7"},
			Passthrough: true, PassthroughEvidence: "iommu_groups", GroupTypes: map[string]int{"identity": 22},
		}
		if diff := cmp.Diff(wantIOMMU, snap.IOMMU); diff != "" {
			t.Errorf("iommu (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]int{"gpu": 8, "nvswitch": 4, "network": 9, "bridge": 39}, hwCountKinds(snap.PCI)); diff != "" {
			t.Errorf("pci kinds (-want +got):\n%s", diff)
		}
		gpu := snap.PCI.Devices["0000:1b:00.0"]
		wantGPU := snapshot.PCIDevice{
			Kind: "gpu", Class: "0x030200", Vendor: "0x10de", Device: "0x2330", Driver: "nvidia",
			Upstream: []string{"0000:17:01.0", "0000:16:00.0", "0000:15:01.0"}, ConfigReadable: true, IOMMUGroupType: "identity",
			BAR1Bytes: 128 << 30,
		}
		if diff := cmp.Diff(wantGPU, gpu); diff != "" {
			t.Errorf("GPU (-want +got):\n%s", diff)
		}
		redirect := &snapshot.ACSControl{SourceValidation: true, RequestRedirect: true, CompletionRedirect: true, UpstreamForwarding: true}
		if diff := cmp.Diff(redirect, snap.PCI.Devices["0000:17:01.0"].ACS); diff != "" {
			t.Errorf("ACS above the first GPU (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(&snapshot.ACSControl{}, snap.PCI.Devices["0000:3f:01.0"].ACS); diff != "" {
			t.Errorf("ACS above the second GPU (-want +got):\n%s", diff)
		}
		if acs := snap.PCI.Devices["0000:16:00.0"].ACS; acs != nil || snap.PCI.ConfigUnreadable != 0 {
			t.Errorf("upstream port ACS = %+v, unreadable = %d", acs, snap.PCI.ConfigUnreadable)
		}
		wantNCCL := snapshot.NCCLConfig{
			File:      map[string]string{"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5"},
			Env:       map[string]string{"NCCL_SOCKET_IFNAME": "bond0"},
			Effective: map[string]string{"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5", "NCCL_SOCKET_IFNAME": "bond0"},
		}
		if diff := cmp.Diff(wantNCCL, snap.NCCLConfig); diff != "" {
			t.Errorf("nccl_config (-want +got):\n%s", diff)
		}
		if !snap.NVIDIA.Persistenced {
			t.Error("nvidia-persistenced not seen")
		}
		hwCheckSources(t, snap, map[string]string{
			"memory.cma_total_kb":                      "/proc/meminfo",
			"memory.transparent_hugepages":             "/sys/kernel/mm/transparent_hugepage/enabled",
			"rdma.devices.mlx5_0.driver":               "/sys/class/infiniband/mlx5_0/device/driver",
			"rdma.devices.mlx5_0.ports.1.state":        "/sys/class/infiniband/mlx5_0/ports/1/state",
			"rdma.dev_files":                           "/dev/infiniband",
			"iommu.passthrough":                        "/sys/kernel/iommu_groups",
			"iommu.hypervisor":                         "default: no hypervisor flag in /proc/cpuinfo and no /sys/hypervisor/type",
			"pci.devices.0000:17:01.0.acs":             "/sys/bus/pci/devices/0000:17:01.0/config",
			"pci.devices.0000:1b:00.0.driver":          "/sys/bus/pci/devices/0000:1b:00.0/driver",
			"nccl_config.file.NCCL_IB_HCA":             "/etc/nccl.conf:3",
			"nccl_config.effective.NCCL_SOCKET_IFNAME": "/etc/profile.d/nccl.sh:2",
			"nvidia.persistenced":                      "/proc/812/comm",
		})
		if errs := hwErrors(snap); len(errs) > 0 {
			t.Errorf("errors: %v", errs)
		}
	})

	t.Run("web-node", func(t *testing.T) {
		snap := hwCollectFixture(t, "web-node")
		if m := snap.Memory; m.CmaTotalKB != 6291456 || m.TransparentHugepages != "always" {
			t.Errorf("memory = %+v", m)
		}
		wantIOMMU := snapshot.IOMMU{Units: []string{}, GroupTypes: map[string]int{}, Hypervisor: true}
		if diff := cmp.Diff(wantIOMMU, snap.IOMMU); diff != "" {
			t.Errorf("iommu (-want +got):\n%s", diff)
		}
		wantPCI := snapshot.PCI{Devices: map[string]snapshot.PCIDevice{"0000:00:03.0": {
			Kind: "network", Class: "0x020000", Vendor: "0x1af4", Device: "0x1000", Driver: "virtio-pci", ConfigReadable: true,
		}}}
		if diff := cmp.Diff(wantPCI, snap.PCI); diff != "" {
			t.Errorf("pci (-want +got):\n%s", diff)
		}
		wantRDMA := snapshot.RDMA{Devices: map[string]snapshot.RDMADevice{}, DevFiles: []string{}}
		if diff := cmp.Diff(wantRDMA, snap.RDMA); diff != "" {
			t.Errorf("rdma (-want +got):\n%s", diff)
		}
		empty := map[string]string{}
		if diff := cmp.Diff(snapshot.NCCLConfig{File: empty, Env: empty, Effective: empty}, snap.NCCLConfig); diff != "" {
			t.Errorf("nccl_config (-want +got):\n%s", diff)
		}
		if snap.NVIDIA.Persistenced {
			t.Error("persistenced on a web node")
		}
		hwCheckSources(t, snap, map[string]string{
			"iommu.hypervisor":    "/proc/cpuinfo",
			"nvidia.persistenced": "default: no nvidia-persistenced process in /proc",
		})
		if errs := hwErrors(snap); len(errs) > 0 {
			t.Errorf("errors: %v", errs)
		}
	})

	t.Run("dropins", func(t *testing.T) {
		snap := hwCollectFixture(t, "dropins")
		if m := snap.Memory; m.CmaTotalKB != 1048576 || m.TransparentHugepages != "madvise" {
			t.Errorf("memory = %+v", m)
		}
		if snap.PCI.ConfigUnreadable != 6 || len(snap.PCI.Devices) != 6 {
			t.Errorf("pci: %d devices, %d unreadable", len(snap.PCI.Devices), snap.PCI.ConfigUnreadable)
		}
		for addr, d := range snap.PCI.Devices {
			if d.ConfigReadable || d.ACS != nil {
				t.Errorf("%s: readable %v, ACS %+v from a 64-byte config", addr, d.ConfigReadable, d.ACS)
			}
		}
		if iommu := snap.IOMMU; !iommu.Enabled || iommu.Passthrough || iommu.PassthroughEvidence != "iommu_groups" || iommu.GroupTypes["DMA-FQ"] != 6 {
			t.Errorf("iommu = %+v", iommu)
		}
		wantNCCL := snapshot.NCCLConfig{
			File:      map[string]string{"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_ALGO": "Ring"},
			Env:       map[string]string{"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "=mlx5_0", "NCCL_SOCKET_IFNAME": "ens1f0np0"},
			Effective: map[string]string{"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "=mlx5_0", "NCCL_SOCKET_IFNAME": "ens1f0np0", "NCCL_ALGO": "Ring"},
		}
		if diff := cmp.Diff(wantNCCL, snap.NCCLConfig); diff != "" {
			t.Errorf("nccl_config (-want +got):\n%s", diff)
		}
		hwCheckSources(t, snap, map[string]string{
			"pci.config_unreadable":                    "/sys/bus/pci/devices",
			"nccl_config.file.NCCL_DEBUG":              "/etc/nccl.conf:2",
			"nccl_config.effective.NCCL_DEBUG":         "/etc/environment:2",
			"nccl_config.env.NCCL_IB_HCA":              "/etc/profile.d/50-nccl.sh:4",
			"nccl_config.effective.NCCL_SOCKET_IFNAME": "/etc/profile.d/60-site.sh:2",
			"nccl_config.effective.NCCL_ALGO":          "/etc/nccl.conf:6",
		})
		if errs := hwErrors(snap); len(errs) > 0 {
			t.Errorf("errors: %v", errs)
		}
	})

	t.Run("rhel-node", func(t *testing.T) {
		snap := hwCollectFixture(t, "rhel-node")
		if m := snap.Memory; !m.CmaPresent || m.CmaTotalKB != 0 || m.TransparentHugepages != "always" {
			t.Errorf("memory = %+v", m)
		}
		if !snap.NVIDIA.Persistenced || len(snap.PCI.Devices) != 0 || snap.IOMMU.Enabled {
			t.Errorf("persistenced %v, pci %v, iommu %+v", snap.NVIDIA.Persistenced, snap.PCI, snap.IOMMU)
		}
		if len(snap.NCCLConfig.Env) != 0 {
			t.Errorf("env = %v", snap.NCCLConfig.Env)
		}
		hwCheckSources(t, snap, map[string]string{"memory.cma_total_kb": "/proc/meminfo", "nvidia.persistenced": "/proc/1322/comm"})
		if errs := hwErrors(snap); len(errs) > 0 {
			t.Errorf("errors: %v", errs)
		}
	})

	t.Run("garbage", func(t *testing.T) {
		snap := hwCollectFixture(t, "garbage")
		want := []string{
			"iommu /sys/kernel/iommu_groups/2/type",
			"memory /proc/meminfo", // MemTotal: lots
			"memory /proc/meminfo", // CmaTotal without a colon
			"memory /proc/meminfo", // binary junk
			"memory /proc/meminfo", // negative count
			"memory /proc/meminfo", // MB unit
			"memory /sys/kernel/mm/transparent_hugepage/enabled",
			"nccl_config /etc/environment",
			"nccl_config /etc/nccl.conf", // "NCCL_DEBUG "
			"nccl_config /etc/nccl.conf", // no '='
			"nccl_config /etc/nccl.conf", // " NCCL_PROTO"
			"nccl_config /etc/nccl.conf", // empty name
			"nccl_config /etc/profile.d/broken.sh",
			"nccl_config /etc/profile.d/nccl.sh",
			"pci /sys/bus/pci/devices/0000:00:1c.0/config",
			"pci /sys/bus/pci/devices/0000:03:00.0/config",
			"pci /sys/bus/pci/devices/0000:03:00.0/driver",
			"pci /sys/bus/pci/devices/0000:04:00.0/class",
			"processes /proc/77/comm",
			"rdma /sys/class/infiniband/mlx5_0/device/driver",
			"rdma /sys/class/infiniband/mlx5_0/ports/1/rate",
			"rdma /sys/class/infiniband/mlx5_0/ports/1/state",
		}
		if diff := cmp.Diff(want, hwErrors(snap)); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
		// What could be read is still there.
		if m := snap.Memory; !m.Present || m.CmaPresent || m.HugePagesFree != 0 || m.TransparentHugepages != "" {
			t.Errorf("memory = %+v", m)
		}
		if got := snap.NCCLConfig.Effective; got["NCCL_IB_DISABLE"] != "1" || got["NCCL_P2P_DISABLE"] != "1" || got["FI_EFA_USE_DEVICE_RDMA"] != "1" || got["NCCL_SHM_DISABLE"] != "1" {
			t.Errorf("effective = %v", got)
		}
		if _, ok := snap.NCCLConfig.Env["NCCL_TOPO_FILE"]; ok {
			t.Error("a command substitution was taken as a value")
		}
		port := snap.RDMA.Devices["mlx5_0"].Ports["1"]
		if port.LinkLayer != "InfiniBand" || port.State != "" || port.Rate != "" {
			t.Errorf("mlx5_0 port = %+v", port)
		}
		if d, ok := snap.PCI.Devices["0000:00:1c.0"]; !ok || d.ACS != nil || d.ConfigReadable {
			t.Errorf("looping bridge = %+v, %v", d, ok)
		}
		if _, ok := snap.PCI.Devices["0000:04:00.0"]; ok {
			t.Error("a function with an unreadable class was kept")
		}
		hwCheckSources(t, snap, nil)
	})
}
