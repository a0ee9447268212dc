package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

func storageRead(t *testing.T, ctx context.Context, store storage.Store) storage.Transaction {
	t.Helper()
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Abort(ctx, txn) })
	return txn
}

// host describes a synthetic snapshot; zero fields take the values of a
// healthy GPU training node.
type host struct {
	name       string
	labels     map[string]string
	hugetlbCMA string // boot param in running and configured cmdline
	removeIPC  string
	driver     string
	nccl       []string
	rdma       int
	errors     int
	// sysctls pads the snapshot to a realistic size.
	sysctls int
}

// doc returns the host as a snapshot in generic JSON form, decoded the way
// Run decodes files (json.Number).
func (h host) doc(t testing.TB) map[string]any {
	t.Helper()
	b, err := json.Marshal(h.snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := snapshot.DecodeJSON(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (h host) snapshot() map[string]any {
	driver := h.driver
	if driver == "" {
		driver = "550.90.07"
	}
	removeIPC := h.removeIPC
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
	if h.hugetlbCMA != "" {
		params["hugetlb_cma"] = h.hugetlbCMA
		sources["boot.configured.params.hugetlb_cma"] = "/etc/default/grub.d/60-hugetlb.cfg:3"
	}
	var nccl []any
	var paths []string
	for _, v := range h.nccl {
		p := fmt.Sprintf("/usr/lib/libnccl.so.%s", v)
		nccl = append(nccl, map[string]any{"version": v, "path": p, "kind": "system", "how": "file-name", "source": p})
		paths = append(paths, p)
	}
	if len(paths) > 0 {
		sources["libraries.nccl"] = strings.Join(paths, ", ")
	}
	rdma := map[string]any{}
	for i := range h.rdma {
		rdma[fmt.Sprintf("mlx5_%d", i)] = map[string]any{"driver": "mlx5_core",
			"ports": map[string]any{"1": map[string]any{"state": "ACTIVE", "state_code": 4, "link_layer": "InfiniBand"}}}
	}
	var errs []any
	for i := range h.errors {
		errs = append(errs, map[string]any{"collector": "sysctl", "path": fmt.Sprintf("/etc/sysctl.d/%d.conf", i), "reason": "line 1: no '='"})
	}
	running := map[string]any{"vm.max_map_count": "262144", "kernel.numa_balancing": "0"}
	for i := range h.sysctls {
		running[fmt.Sprintf("net.ipv4.conf.eth%d.rp_filter", i)] = "1"
	}
	var gpus []any
	for i := range 8 {
		gpus = append(gpus, map[string]any{"bus_id": fmt.Sprintf("0000:%02x:00.0", 0x18+i), "model": "NVIDIA H100 80GB HBM3"})
	}
	labels := map[string]any{}
	for k, v := range h.labels {
		labels[k] = v
	}
	return map[string]any{
		"schema":       "fleetaudit.snapshot/v1",
		"host":         h.name,
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

// writeFile writes name under dir, creating directories.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// gpuFleets is the fleet configuration most tests use: what the built-in
// profiles of those names select.
func gpuFleets() map[string]FleetConfig {
	return map[string]FleetConfig{
		"gpu-training": {Select: ruleProfiles("gpu-training")},
		"web-serving":  {Select: ruleProfiles("web-serving")},
	}
}

// ruleProfiles selects, as a built-in fleet profile does (include
// "tag:all" and "tag:NAME"), the rules for every fleet and those whose
// custom.profiles name one of names. fleets_test checks the built-in
// profiles select the same (this package cannot import fleets).
func ruleProfiles(names ...string) func(Rule) bool {
	return func(r Rule) bool {
		for _, p := range r.Profiles {
			if p == ProfileAll || slices.Contains(names, p) {
				return true
			}
		}
		return false
	}
}

func ruleIDs(fs []Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Rule)
	}
	return ids
}
