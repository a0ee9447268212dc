// Package testhost builds the synthetic host snapshots that the tests of
// the policy engine (policies) and of its runner (policies/fleetrun) share.
package testhost

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// Host describes a synthetic snapshot; zero fields take the values of a
// healthy GPU training node.
type Host struct {
	Name       string
	Labels     map[string]string
	HugetlbCMA string // boot param in running and configured cmdline
	RemoveIPC  string
	Driver     string
	NCCL       []string
	RDMA       int
	Errors     int
	// Sysctls pads the snapshot to a realistic size.
	Sysctls int
}

// Doc returns the host as a snapshot in generic JSON form, decoded the way
// Run decodes files (json.Number).
func (h Host) Doc(t testing.TB) map[string]any {
	t.Helper()
	b, err := json.Marshal(h.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := snapshot.DecodeJSON(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Snapshot is the host's snapshot document.
func (h Host) Snapshot() map[string]any {
	driver := h.Driver
	if driver == "" {
		driver = "550.90.07"
	}
	removeIPC := h.RemoveIPC
	if removeIPC == "" {
		removeIPC = "no"
	}
	params := map[string]any{"BOOT_IMAGE": "/vmlinuz", "iommu": "pt"}
	sources := map[string]any{
		"boot.running":                       "/proc/cmdline",
		"boot.configured.params.iommu":       "/etc/default/grub:6",
		"logind.remove_ipc":                  "/etc/systemd/logind.conf.d/10-hpc.conf:2",
		"nvidia.driver_version":              "/proc/driver/nvidia/version:1",
		"sysctl.running.vm.max_map_count":    "/proc/sys/vm/max_map_count",
		"sysctl.configured.vm.max_map_count": "/etc/sysctl.d/90-gpu.conf:1",
	}
	if h.HugetlbCMA != "" {
		params["hugetlb_cma"] = h.HugetlbCMA
		sources["boot.configured.params.hugetlb_cma"] = "/etc/default/grub.d/60-hugetlb.cfg:3"
	}
	var nccl []any
	var paths []string
	for _, v := range h.NCCL {
		p := fmt.Sprintf("/usr/lib/libnccl.so.%s", v)
		nccl = append(nccl, map[string]any{"version": v, "path": p, "kind": "system", "how": "file-name", "source": p})
		paths = append(paths, p)
	}
	if len(paths) > 0 {
		sources["libraries.nccl"] = strings.Join(paths, ", ")
	}
	rdma := map[string]any{}
	for i := range h.RDMA {
		rdma[fmt.Sprintf("mlx5_%d", i)] = map[string]any{"driver": "mlx5_core",
			"ports": map[string]any{"1": map[string]any{"state": "ACTIVE", "state_code": 4, "link_layer": "InfiniBand"}}}
	}
	var errs []any
	for i := range h.Errors {
		errs = append(errs, map[string]any{"collector": "sysctl", "path": fmt.Sprintf("/etc/sysctl.d/%d.conf", i), "reason": "line 1: no '='"})
	}
	running := map[string]any{"vm.max_map_count": "262144", "kernel.numa_balancing": "0"}
	for i := range h.Sysctls {
		running[fmt.Sprintf("net.ipv4.conf.eth%d.rp_filter", i)] = "1"
	}
	var gpus []any
	for i := range 8 {
		gpus = append(gpus, map[string]any{"bus_id": fmt.Sprintf("0000:%02x:00.0", 0x18+i), "model": "NVIDIA H100 80GB HBM3"})
	}
	labels := map[string]any{}
	for k, v := range h.Labels {
		labels[k] = v
	}
	return map[string]any{
		"schema":       "fleetaudit.snapshot/v1",
		"host":         h.Name,
		"collected_at": "2026-11-30T17:00:00Z",
		"source":       map[string]any{"kind": "local", "root": "/"},
		"labels":       labels,
		"boot": map[string]any{
			"running":    map[string]any{"present": true, "cmdline": "BOOT_IMAGE=/vmlinuz iommu=pt", "params": params},
			"configured": map[string]any{"loader": "grub", "present": true, "cmdline": "iommu=pt", "params": params},
		},
		"sysctl": map[string]any{"running": running, "configured": map[string]any{"vm.max_map_count": "262144"}},
		"limits": map[string]any{
			"entries":   []any{map[string]any{"domain": "*", "type": "-", "item": "memlock", "value": "unlimited", "source": "/etc/security/limits.d/90-rdma.conf:1"}},
			"effective": map[string]any{"*": map[string]any{"memlock": map[string]any{"soft": "unlimited", "hard": "unlimited"}}},
		},
		"logind":    map[string]any{"remove_ipc": removeIPC, "remove_ipc_default": false},
		"kernel":    map[string]any{"release": "5.15.0-105-generic", "arch": "x86_64"},
		"os":        map[string]any{"id": "ubuntu", "version_id": "22.04"},
		"nvidia":    map[string]any{"present": true, "driver_version": driver, "flavor": "open", "gpus": gpus},
		"modules":   map[string]any{"loaded": []any{"nvidia", "nvidia_uvm", "mlx5_ib"}, "configured": map[string]any{}},
		"libraries": map[string]any{"nccl": nccl, "cuda": []any{}},
		"memory":    map[string]any{"mem_total_kb": 2113645112, "cma_total_kb": 0},
		"rdma":      map[string]any{"devices": rdma},
		"sources":   sources,
		"errors":    errs,
	}
}

// WriteSnapshots writes each host to dir/<name>.json and returns the paths.
func WriteSnapshots(t testing.TB, dir string, hosts ...Host) []string {
	t.Helper()
	var files []string
	for _, h := range hosts {
		b, err := json.Marshal(h.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

// Bench is GPU node i of the benchmarks: a snapshot of realistic size
// (about 20 KB: a few hundred running sysctls) and a few findings.
func Bench(i int) Host {
	h := Host{
		Name:    fmt.Sprintf("gpu-%05d", i),
		Labels:  map[string]string{"fleet": "gpu-training", "rack": fmt.Sprintf("r%02d", i%40)},
		NCCL:    []string{"2.20.5"},
		Driver:  "550.90.07",
		RDMA:    8,
		Sysctls: 300,
	}
	switch i % 10 {
	case 0:
		h.HugetlbCMA, h.Driver = "6G", "535.104.05"
	case 1:
		h.RemoveIPC, h.Errors = "yes", 2
	case 2:
		h.NCCL = []string{"2.18.3", "2.20.5"}
	}
	return h
}
