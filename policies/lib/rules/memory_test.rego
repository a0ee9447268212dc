package fleetaudit.rules.memory_test

import data.fleetaudit.rules.memory

test_thp_always if {
	count(memory.thp_always) == 1 with input as {"memory": {"transparent_hugepages": "always"}}
}

test_thp_madvise_passes if {
	count(memory.thp_always) == 0 with input as {"memory": {"transparent_hugepages": "madvise"}}
	count(memory.thp_always) == 0 with input as {"memory": {"transparent_hugepages": ""}}
}

test_iommu_translating_on_bare_metal if {
	h := {"iommu": {"enabled": true, "passthrough": false, "hypervisor": false, "group_types": {"DMA-FQ": 12}}}
	count(memory.iommu_translating) == 1 with input as h
}

test_iommu_passthrough_or_vm if {
	count(memory.iommu_translating) == 0 with input as {"iommu": {"enabled": true, "passthrough": true, "hypervisor": false}}
	count(memory.iommu_translating) == 0 with input as {"iommu": {"enabled": true, "passthrough": false, "hypervisor": true}}
	count(memory.iommu_translating) == 0 with input as {"iommu": {"enabled": false, "passthrough": false, "hypervisor": false}}
}

test_thp_always_fix if {
	[f] := [f | some f in memory.thp_always with input as {"memory": {"transparent_hugepages": "always"}}]
	f.fix == {"kind": "boot-param", "set": {"transparent_hugepage": "madvise"}}
}

test_iommu_translating_fix if {
	h := {"iommu": {"enabled": true, "passthrough": false, "hypervisor": false, "group_types": {"DMA": 4}}}
	[f] := [f | some f in memory.iommu_translating with input as h]
	f.fix == {"kind": "boot-param", "set": {"iommu": "pt"}}
}
