package fleetaudit.rules.bar1_test

import data.fleetaudit.rules.bar1

host(model, bar1) := {
	"rdma": {"devices": {"rdmap16s27": {"driver": "efa"}}},
	"nvidia": {"gpus": [{"bus_id": "0000:10:1c.0", "model": model}]},
	"pci": {"devices": {"0000:10:1c.0": {"kind": "gpu", "bar1_bytes": bar1}}},
}

test_small_bar1 if {
	[f] := [f | some f in bar1.gpu_bar1_small with input as host("NVIDIA A100-SXM4-40GB", 268435456)]
	f.msg == "GPU 0000:10:1c.0 (NVIDIA A100-SXM4-40GB) has a 256 MiB BAR1 aperture for 40 GB of memory: GPUDirect RDMA cannot map all of it"
	f.evidence == ["pci.devices.0000:10:1c.0.bar1_bytes", "nvidia.gpus", "rdma.devices"]
}

# Both sides: 64 GiB covers 40 GB (and 128 GiB an H100's 80 GB); 32 GiB does not.
test_bar1_boundary if {
	count(bar1.gpu_bar1_small) == 0 with input as host("NVIDIA A100-SXM4-40GB", 68719476736)
	count(bar1.gpu_bar1_small) == 0 with input as host("NVIDIA H100 80GB HBM3", 137438953472)
	count(bar1.gpu_bar1_small) == 1 with input as host("NVIDIA A100-SXM4-40GB", 34359738368)
	count(bar1.gpu_bar1_small) == 1 with input as host("NVIDIA A100-SXM4-40GB", 39999999999)
	count(bar1.gpu_bar1_small) == 0 with input as host("NVIDIA A100-SXM4-40GB", 40000000000)
}

# No RDMA, no size in the model name, or BAR1 not read: not judged.
test_not_judged if {
	count(bar1.gpu_bar1_small) == 0 with input as object.union(object.remove(host("NVIDIA A100-SXM4-40GB", 268435456), ["rdma"]), {"rdma": {"devices": {}}})
	count(bar1.gpu_bar1_small) == 0 with input as host("NVIDIA H200", 268435456)
	count(bar1.gpu_bar1_small) == 0 with input as object.union(host("NVIDIA A100-SXM4-40GB", 0), {"pci": {"devices": {"0000:10:1c.0": {"bar1_bytes": 0}}}})
	count(bar1.gpu_bar1_small) == 0 with input as {"rdma": {"devices": {"x": {}}}, "nvidia": {"gpus": [{"bus_id": "0000:10:1c.0", "model": "NVIDIA A100-SXM4-40GB"}]}, "pci": {"devices": {}}}
}
