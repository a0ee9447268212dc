package snapshot

import (
	"maps"
	"slices"
)

// familyWrites are the fact paths each collector family writes (a
// section, or facts below one), keyed by the name its errors are filed
// under (CollectionError.Collector). An error a family records leaves all
// of them partly unread, so a family that writes into a section named
// otherwise (processes into nvidia.persistenced) is listed with that
// fact. collectors' registration of each family takes its writes from
// here: policies, which reads errors, cannot import collectors.
var familyWrites = map[string][]string{
	"os":          {"os"},
	"kernel":      {"kernel"},
	"boot":        {"boot"},
	"sysctl":      {"sysctl"},
	"limits":      {"limits"},
	"logind":      {"logind"},
	"nvidia":      {"nvidia", "kernel.arch"}, // kernel.arch from the driver's banner before Linux 6.1
	"modules":     {"modules"},
	"nccl_config": {"nccl_config"},
	"libraries":   {"libraries", "nvidia.nvml_versions"},
	"memory":      {"memory"},
	"rdma":        {"rdma"},
	"iommu":       {"iommu"},
	"pci":         {"pci"},
	"net":         {"net"},
	"services":    {"services"},
	"firewall":    {"firewall"},
	"dmi":         {"dmi"},
	"processes":   {"nvidia.persistenced"},
	"pods":        {"pods"},
}

// FamilyWrites lists the fact paths the collector family named collector
// writes; nil for a name that is no family.
func FamilyWrites(collector string) []string { return slices.Clone(familyWrites[collector]) }

// FamilyNames lists the collector families that FamilyWrites knows, sorted.
func FamilyNames() []string { return slices.Sorted(maps.Keys(familyWrites)) }
