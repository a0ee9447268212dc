# PCIe topology and RDMA devices against what the host claims.
package fleetaudit.rules.pci

# Bridges above a GPU or NIC whose ACS redirects peer traffic upstream.
# Bridges with ACS request or completion redirect on. Found first: on most
# hosts there are none, and the walk over GPU paths is skipped.
redirect_bridges := {b |
	some b, d in input.pci.devices
	redirect_flags := {d.acs.request_redirect, d.acs.completion_redirect}
	redirect_flags[true]
}

redirecting := {[dev, bridge] |
	count(redirect_bridges) > 0
	some dev, d in input.pci.devices
	d.kind in {"gpu", "network"}
	some bridge in d.upstream
	redirect_bridges[bridge]
}

# METADATA
# title: PCIe ACS redirect on a GPU or NIC path
# description: >-
#   On bare metal, a PCIe bridge between a GPU or NIC and its root port has ACS
#   request or completion redirect enabled. Peer-to-peer traffic (GPU to GPU,
#   GPU to NIC for GPUDirect RDMA) is then sent up to the root complex instead
#   of across the switch: bandwidth drops and NCCL may hang. Virtual machines
#   are not reported (ACS there protects guest isolation).
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
#   description: NCCL troubleshooting, PCI Access Control Services
# custom:
#   id: acs-redirect-on-gpu-path
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Disable ACS redirect on the PCIe switches above GPUs and NICs (BIOS
#     setting, or setpci at boot in the GPU fleet's layer).
#   facts:
#   - pci.devices
#   - iommu.hypervisor
acs_redirect_on_gpu_path contains f if {
	input.iommu.hypervisor == false
	some bridge in {b | some [_, b] in redirecting}
	devices := sort([dev | some [dev, b] in redirecting; b == bridge])
	f := {
		"msg": sprintf("bridge %s redirects peer traffic (ACS RR/CR) above %s", [bridge, concat(", ", devices)]),
		"evidence": [sprintf("pci.devices.%s.acs", [bridge])],
	}
}

rdma_label_keys := {"feature.node.kubernetes.io/rdma.available", "nvidia.com/rdma", "rdma", "efa", "infiniband", "vpc.amazonaws.com/efa.present"}

labelled_rdma := {k |
	some k, v in input.labels
	k in rdma_label_keys
	lower(v) in {"true", "1", "yes"}
}

# Device plugins advertise RDMA devices as node allocatable resources: EFA
# (vpc.amazonaws.com/efa, one per device), RDMA shared devices (rdma/*),
# host devices (nvidia.com/hostdev). A count above 0 claims a device.
allocatable_rdma := {sprintf("%s=%s", [r, q]) |
	some r, q in object.get(input, ["node", "allocatable"], {})
	regex.match(`^rdma/|^vpc\.amazonaws\.com/efa$|/ib$|^nvidia\.com/hostdev`, r)
	regex.match(`^[1-9][0-9]*[kMG]?$`, q)
}

advertised := {sprintf("label %s", [k]) | some k in labelled_rdma} | {sprintf("allocatable %s", [a]) | some a in allocatable_rdma}

active_ports := [p |
	some _, d in input.rdma.devices
	some _, p in d.ports
	p.state == "ACTIVE"
]

# METADATA
# title: RDMA advertised in labels but not on the host
# description: >-
#   A node label advertises RDMA, InfiniBand or EFA (for example
#   feature.node.kubernetes.io/rdma.available=true), or the Kubernetes node's
#   allocatable resources hold an RDMA device (vpc.amazonaws.com/efa, rdma/*,
#   */ib, nvidia.com/hostdev above 0: a device plugin registered it), but the
#   host has no RDMA device, or none of its ports is ACTIVE. Schedulers place
#   RDMA jobs on it and NCCL silently falls back to TCP sockets.
# related_resources:
# - ref: https://kubernetes-sigs.github.io/node-feature-discovery/stable/usage/features.html
#   description: node feature labels
# custom:
#   id: rdma-label-without-device
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Fix the RDMA device (driver, cabling, subnet manager) or remove the label
#     until it works.
#   facts:
#   - labels
#   - node.allocatable
#   - rdma.devices
rdma_label_without_device contains f if {
	count(advertised) > 0
	count(active_ports) == 0
	f := {
		"msg": sprintf("%s advertises RDMA, but the host has %d RDMA devices and no ACTIVE port", [concat(", ", sort(advertised)), count(input.rdma.devices)]),
		"evidence": array.concat(advertised_evidence, ["rdma.devices"]),
	}
}

advertised_evidence := array.concat(
	["labels" | count(labelled_rdma) > 0],
	["node.allocatable" | count(allocatable_rdma) > 0],
)

efa_count := count([1 | some _, d in input.rdma.devices; d.driver == "efa"])

# The host's instance type: its Kubernetes label, else (an EC2 instance on
# Nitro, whose firmware names it) the DMI product name.
instance_type := {"type": t, "fact": "labels"} if {
	t := input.labels["node.kubernetes.io/instance-type"]
} else := {"type": t, "fact": "dmi.product_name"} if {
	input.dmi.sys_vendor == "Amazon EC2"
	t := input.dmi.product_name
}

# METADATA
# title: Fewer EFA devices than the instance type has
# description: >-
#   The host's instance type (label node.kubernetes.io/instance-type, else on
#   EC2 the DMI product name /sys/class/dmi/id/product_name, which Nitro
#   sets to the instance type) has a known EFA device count (param efa_devices_by_instance_type: p5.48xlarge and
#   p5e.48xlarge 32, p5en.48xlarge 16, p4d.24xlarge 4) and the host has a
#   different number of EFA devices: a NIC that did not attach at boot halves
#   or worse a job's network bandwidth. With the host's Kubernetes node, the
#   EFA devices its device plugin advertises (allocatable
#   vpc.amazonaws.com/efa, one per device) are held to the host's count too:
#   more advertised than present schedules jobs onto devices that do not
#   exist; fewer leaves devices unused and jobs that ask for all unscheduled.
# related_resources:
# - ref: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html
#   description: EFA and the supported instance types
# - ref: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/identify_ec2_instances.html
#   description: Identifying an EC2 instance from DMI (/sys/devices/virtual/dmi/id)
# custom:
#   id: efa-device-count-mismatch
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Stop and start the instance (or replace it) so every EFA interface
#     attaches, and check the launch template's network interfaces.
#   facts:
#   - labels
#   - dmi
#   - node.allocatable
#   - rdma.devices
efa_device_count_mismatch contains f if {
	itype := instance_type.type
	want := data.fleetaudit.params.efa_devices_by_instance_type[itype]
	efa_count != want
	f := {
		"msg": sprintf("%s has %d EFA devices, %d expected", [itype, efa_count, want]),
		"evidence": [instance_type.fact, "rdma.devices"],
	}
}

efa_device_count_mismatch contains f if {
	q := input.node.allocatable["vpc.amazonaws.com/efa"]
	regex.match(`^[0-9]+$`, q)
	advertised_efa := to_number(q)
	advertised_efa != efa_count
	f := {
		"msg": sprintf("node %s advertises %d EFA devices (allocatable vpc.amazonaws.com/efa), the host has %d", [input.node.name, advertised_efa, efa_count]),
		"evidence": ["node.allocatable", "rdma.devices"],
	}
}
