package snapshot

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRealGPUNodeSnapshot pins what `fleetaudit collect` found on a real
// H200 node (examples/snapshots/h200-vm.json, checked by hand against
// h200-vm.truth.txt: nvidia-smi, library listings, /proc). It guards the
// reader against schema changes that would make collected snapshots
// unreadable, and records the facts the first real node showed.
func TestRealGPUNodeSnapshot(t *testing.T) {
	data, err := os.ReadFile("../examples/snapshots/h200-vm.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Errors) != 0 || len(s.Unknown()) != 0 {
		t.Errorf("errors %v, unknown fields %v", s.Errors, s.Unknown())
	}
	got := map[string]any{
		"driver":     s.NVIDIA.DriverVersion,
		"flavor":     s.NVIDIA.Flavor,
		"nvml":       s.NVIDIA.NVMLVersions,
		"gpus":       s.NVIDIA.GPUs,
		"kernel":     s.Kernel.Release,
		"os":         s.OS.ID + " " + s.OS.VersionID,
		"cma":        s.Memory.CmaPresent,
		"thp":        s.Memory.TransparentHugepages,
		"logind":     s.Logind.Installed,
		"rdma":       len(s.RDMA.Devices),
		"hypervisor": s.IOMMU.Hypervisor,
	}
	var nccl, cuda []string
	for _, l := range s.Libraries.NCCL {
		nccl = append(nccl, l.Version+" "+l.Kind+" "+l.Path)
	}
	for _, l := range s.Libraries.CUDA {
		cuda = append(cuda, l.Version+" "+l.Kind)
	}
	got["nccl"], got["cuda"] = nccl, cuda
	want := map[string]any{
		"driver": "580.159.04",
		"flavor": "open",
		"nvml":   []string{"580.159.04"},
		"gpus":   []GPU{{BusID: "0000:00:06.0", Model: "NVIDIA H200", PersistenceMode: "enabled"}}, // nvidia-smi -pm 1, no daemon
		"kernel": "6.18.44-fc-v657-gpu",
		"os":     "ubuntu 24.04",
		"cma":    false,
		"thp":    "madvise",
		"logind": false,
		"rdma":   0,
		// Two NCCLs: the libnccl2 package and the torch venv's wheel.
		"nccl": []string{
			"2.28.3 system /usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
			"2.28.9 wheel /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
		},
		"cuda":       []string{"13.0.96 wheel", "13.0.96 system"},
		"hypervisor": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("real node facts (-want +got):\n%s", diff)
	}
	if src := s.Sources["boot.running.params.mitigations"].String(); src != "/proc/cmdline" {
		t.Errorf("mitigations provenance = %q", src)
	}
}
