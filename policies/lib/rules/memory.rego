# Memory management settings.
package fleetaudit.rules.memory

# METADATA
# title: Transparent hugepages always on a web server
# description: >-
#   /sys/kernel/mm/transparent_hugepage/enabled is "always": every anonymous
#   mapping may be backed by 2 MiB pages, so fork() and copy-on-write copy and
#   compact huge pages, and latency-sensitive caches and databases (Redis,
#   MongoDB, PostgreSQL) see stalls and memory bloat. "madvise" leaves the
#   choice to the applications that ask.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/mm/transhuge.html
#   description: transparent hugepage support
# custom:
#   id: thp-always
#   severity: medium
#   profiles: [web-serving]
#   remediation: >-
#     Set transparent_hugepage=madvise on the web fleet's kernel command line
#     (or write madvise to the sysfs file at boot).
#   facts:
#   - memory.transparent_hugepages
thp_always contains f if {
	input.memory.transparent_hugepages == "always"
	f := {
		"msg": "transparent hugepages are \"always\": fork and copy-on-write latency spikes in caches and databases",
		"evidence": ["memory.transparent_hugepages"],
		"fix": {"kind": "boot-param", "set": {"transparent_hugepage": "madvise"}},
	}
}

# METADATA
# title: IOMMU translating DMA on a bare-metal training host
# description: >-
#   The IOMMU is enabled in translating mode (DMA or DMA-FQ domains; no
#   iommu=pt / iommu.passthrough=1) on bare metal. Every GPU and NIC DMA then
#   goes through IOMMU page-table walks and IOTLB misses, costing RDMA and
#   GPUDirect bandwidth. Virtual machines are not reported: there the IOMMU
#   is the hypervisor's to configure.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/kernel-parameters.html
#   description: iommu=pt and iommu.passthrough
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
#   description: NCCL troubleshooting, IOMMU and PCI ACS
# custom:
#   id: iommu-translating
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Add iommu=pt to the GPU fleet's kernel command line (keep the IOMMU on
#     for device isolation, without translation for host devices).
#   facts:
#   - iommu.enabled
#   - iommu.passthrough
#   - iommu.hypervisor
#   - iommu.group_types
iommu_translating contains f if {
	input.iommu.enabled == true
	input.iommu.passthrough == false
	input.iommu.hypervisor == false
	f := {
		"msg": sprintf("the IOMMU translates DMA (group types %v) on bare metal: GPU and NIC traffic pays for IOMMU translation", [input.iommu.group_types]),
		"evidence": ["iommu.enabled", "iommu.passthrough", "iommu.group_types"],
		"fix": {"kind": "boot-param", "set": {"iommu": "pt"}},
	}
}
