# GPU BAR1: the aperture through which peers (RDMA NICs) reach GPU memory.
package fleetaudit.rules.bar1

# GPU memory as the model name NVIDIA reports states it ("NVIDIA H100 80GB
# HBM3", "NVIDIA A100-SXM4-40GB"); models without a size are not judged.
memory_gb(model) := to_number(m[1]) if {
	m := regex.find_all_string_submatch_n(`([0-9]+)GB`, model, 1)[0]
}

# METADATA
# title: GPU BAR1 aperture smaller than its memory
# description: >-
#   The host has RDMA devices and a GPU whose BAR1 (the PCI aperture, from
#   /sys/bus/pci/devices/<gpu>/resource, through which GPUDirect RDMA maps GPU
#   memory for the NIC) is smaller than the GPU's memory, as the model name
#   states it. Registrations beyond the aperture fail or thrash the BAR1
#   mappings; a VM whose hypervisor exposes a small BAR1 is the usual cause.
#   GPUs whose model name carries no memory size, or whose resource file was
#   not read, are not judged.
# related_resources:
# - ref: https://docs.nvidia.com/cuda/gpudirect-rdma/index.html
#   description: GPUDirect RDMA maps GPU memory through the BAR1 aperture
# - ref: https://docs.kernel.org/PCI/sysfs-pci.html
#   description: the sysfs resource file, one line per BAR
# custom:
#   id: gpu-bar1-small
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Give the GPU a BAR1 at least as large as its memory: on a VM, a large-BAR
#     (64-bit MMIO) passthrough configuration from the hypervisor or cloud
#     instance type; on bare metal, "Above 4G decoding" and resizable BAR in
#     the firmware.
#   facts:
#   - rdma.devices
#   - nvidia.gpus
#   - pci.devices
gpu_bar1_small contains f if {
	count(input.rdma.devices) > 0
	some g in input.nvidia.gpus
	gb := memory_gb(g.model)
	bar1 := input.pci.devices[g.bus_id].bar1_bytes
	bar1 > 0
	bar1 < gb * 1000000000
	f := {
		"msg": sprintf("GPU %s (%s) has a %d MiB BAR1 aperture for %d GB of memory: GPUDirect RDMA cannot map all of it", [g.bus_id, g.model, bar1 / 1048576, gb]),
		"evidence": [sprintf("pci.devices.%s.bar1_bytes", [g.bus_id]), "nvidia.gpus", "rdma.devices"],
	}
}
