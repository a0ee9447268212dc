package fleetaudit.rules.pci_test

import data.fleetaudit.rules.pci

acs(rr) := {"request_redirect": rr, "completion_redirect": false}

topology(rr, hypervisor) := {
	"iommu": {"hypervisor": hypervisor},
	"pci": {"devices": {
		"0000:15:01.0": {"kind": "bridge", "acs": acs(false)},
		"0000:17:01.0": {"kind": "bridge", "acs": acs(rr)},
		"0000:1b:00.0": {"kind": "gpu", "upstream": ["0000:17:01.0", "0000:15:01.0"]},
		"0000:18:00.0": {"kind": "network", "upstream": ["0000:17:01.0", "0000:15:01.0"]},
	}},
}

test_acs_redirect_above_gpu_and_nic if {
	[f] := [f | some f in pci.acs_redirect_on_gpu_path with input as topology(true, false)]
	f.msg == "bridge 0000:17:01.0 redirects peer traffic (ACS RR/CR) above 0000:18:00.0, 0000:1b:00.0"
	f.evidence == ["pci.devices.0000:17:01.0.acs"]
}

test_acs_off_or_vm if {
	count(pci.acs_redirect_on_gpu_path) == 0 with input as topology(false, false)
	count(pci.acs_redirect_on_gpu_path) == 0 with input as topology(true, true)
}

port(state) := {"1": {"state": state}}

test_rdma_label_without_active_port if {
	h := {"labels": {"feature.node.kubernetes.io/rdma.available": "true"}, "rdma": {"devices": {"mlx5_0": {"driver": "mlx5_core", "ports": port("DOWN")}}}}
	count(pci.rdma_label_without_device) == 1 with input as h
}

test_rdma_label_with_active_port if {
	h := {"labels": {"feature.node.kubernetes.io/rdma.available": "true"}, "rdma": {"devices": {"mlx5_0": {"driver": "mlx5_core", "ports": port("ACTIVE")}}}}
	count(pci.rdma_label_without_device) == 0 with input as h
	count(pci.rdma_label_without_device) == 0 with input as {"labels": {}, "rdma": {"devices": {}}}
}

efa_devices(n) := {sprintf("rdmap%ds27", [i]): {"driver": "efa"} | some i in numbers.range(1, n)}

test_efa_count_mismatch if {
	h := {"labels": {"node.kubernetes.io/instance-type": "p5.48xlarge"}, "rdma": {"devices": efa_devices(31)}}
	[f] := [f | some f in pci.efa_device_count_mismatch with input as h with data.fleetaudit.params as {"efa_devices_by_instance_type": {"p5.48xlarge": 32}}]
	f.msg == "p5.48xlarge has 31 EFA devices, 32 expected"
}

# No instance-type label: an EC2 instance's firmware names its type.
test_efa_count_from_dmi if {
	params := {"efa_devices_by_instance_type": {"p5.48xlarge": 32}}
	h := {"dmi": {"sys_vendor": "Amazon EC2", "product_name": "p5.48xlarge"}, "rdma": {"devices": efa_devices(16)}}
	[f] := [f | some f in pci.efa_device_count_mismatch with input as h with data.fleetaudit.params as params]
	f.msg == "p5.48xlarge has 16 EFA devices, 32 expected"
	f.evidence == ["dmi.product_name", "rdma.devices"]

	# The label wins over DMI.
	labelled := object.union(h, {"labels": {"node.kubernetes.io/instance-type": "p5en.48xlarge"}})
	count(pci.efa_device_count_mismatch) == 0 with input as labelled with data.fleetaudit.params as {"efa_devices_by_instance_type": {"p5.48xlarge": 32, "p5en.48xlarge": 16}}

	# Not EC2 (a vendor's own product name), or all devices present.
	other := {"dmi": {"sys_vendor": "Supermicro", "product_name": "p5.48xlarge"}, "rdma": {"devices": efa_devices(16)}}
	count(pci.efa_device_count_mismatch) == 0 with input as other with data.fleetaudit.params as params
	full := {"dmi": {"sys_vendor": "Amazon EC2", "product_name": "p5.48xlarge"}, "rdma": {"devices": efa_devices(32)}}
	count(pci.efa_device_count_mismatch) == 0 with input as full with data.fleetaudit.params as params
}

test_efa_count_matches_or_unknown_type if {
	params := {"efa_devices_by_instance_type": {"p5.48xlarge": 32}}
	h := {"labels": {"node.kubernetes.io/instance-type": "p5.48xlarge"}, "rdma": {"devices": efa_devices(32)}}
	count(pci.efa_device_count_mismatch) == 0 with input as h with data.fleetaudit.params as params
	h2 := {"labels": {"node.kubernetes.io/instance-type": "g6.xlarge"}, "rdma": {"devices": {}}}
	count(pci.efa_device_count_mismatch) == 0 with input as h2 with data.fleetaudit.params as params
}

# Label-vs-reality with the Kubernetes node: what device plugins advertise.
test_rdma_allocatable_without_device if {
	h := {"labels": {}, "node": {"name": "gpu-a-002", "allocatable": {"rdma/ib": "1k", "nvidia.com/gpu": "8"}}, "rdma": {"devices": {}}}
	[f] := [f | some f in pci.rdma_label_without_device with input as h]
	f.msg == "allocatable rdma/ib=1k advertises RDMA, but the host has 0 RDMA devices and no ACTIVE port"
	f.evidence == ["node.allocatable", "rdma.devices"]
}

test_rdma_allocatable_zero_or_with_active_port_pass if {
	zero := {"node": {"name": "n", "allocatable": {"vpc.amazonaws.com/efa": "0"}}, "rdma": {"devices": {}}}
	count(pci.rdma_label_without_device) == 0 with input as zero
	active := {"node": {"name": "n", "allocatable": {"rdma/ib": "1k"}}, "rdma": {"devices": {"mlx5_0": {"driver": "mlx5_core", "ports": port("ACTIVE")}}}}
	count(pci.rdma_label_without_device) == 0 with input as active

	# No node read: nothing advertised by a device plugin.
	count(pci.rdma_label_without_device) == 0 with input as {"rdma": {"devices": {}}}
}

test_efa_allocatable_differs_from_devices if {
	h := {"node": {"name": "p5-001", "allocatable": {"vpc.amazonaws.com/efa": "32"}}, "rdma": {"devices": efa_devices(30)}}
	[f] := [f | some f in pci.efa_device_count_mismatch with input as h with data.fleetaudit.params as {}]
	f.msg == "node p5-001 advertises 32 EFA devices (allocatable vpc.amazonaws.com/efa), the host has 30"
	f.evidence == ["node.allocatable", "rdma.devices"]
}

test_efa_allocatable_matches_or_absent if {
	h := {"node": {"name": "p5-001", "allocatable": {"vpc.amazonaws.com/efa": "32"}}, "rdma": {"devices": efa_devices(32)}}
	count(pci.efa_device_count_mismatch) == 0 with input as h with data.fleetaudit.params as {}
	count(pci.efa_device_count_mismatch) == 0 with input as {"node": {"name": "c", "allocatable": {"cpu": "64"}}, "rdma": {"devices": {}}} with data.fleetaudit.params as {}
}
