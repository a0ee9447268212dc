package fleetaudit.rules.nvidia_test

import data.fleetaudit.rules.nvidia

host(driver, nvml) := {"nvidia": {"present": true, "driver_version": driver, "module_version": driver, "nvml_versions": nvml, "flavor": "open", "gpus": [], "nvswitches": 0, "fabric_manager": ""}, "libraries": {"cuda": []}}

test_library_mismatch if {
	[f] := [f | some f in nvidia.driver_library_mismatch with input as host("535.104.05", ["535.129.03"])]
	f.msg == "kernel module 535.104.05, user-space NVML 535.129.03: NVML fails with Driver/library version mismatch"
}

test_library_match_or_unknown if {
	count(nvidia.driver_library_mismatch) == 0 with input as host("580.159.04", ["580.159.04"])
	count(nvidia.driver_library_mismatch) == 0 with input as host("580.159.04", [])
}

test_cuda_too_new_for_driver if {
	h := object.union(host("535.104.05", []), {"libraries": {"cuda": [{"version": "13.0.96", "path": "/opt/v/libcudart.so.13"}, {"version": "12.2.140", "path": "/usr/local/cuda/libcudart.so.12"}]}})
	[f] := [f | some f in nvidia.cuda_driver_too_old with input as h]
	contains(f.msg, "CUDA runtime 13.0.96")
}

test_cuda_supported if {
	h := object.union(host("580.159.04", []), {"libraries": {"cuda": [{"version": "13.0.96", "path": "/x"}]}})
	count(nvidia.cuda_driver_too_old) == 0 with input as h
}

test_fabric_manager_missing_and_mismatched if {
	h := object.union(host("535.104.05", []), {"nvidia": {"nvswitches": 4}})
	[f] := [f | some f in nvidia.fabric_manager_mismatch with input as h]
	f.msg == "4 NVSwitches but no nvidia-fabricmanager installed"
	h2 := object.union(h, {"nvidia": {"fabric_manager": "535.129.03"}})
	count(nvidia.fabric_manager_mismatch) == 1 with input as h2
}

test_fabric_manager_matches_or_no_switches if {
	count(nvidia.fabric_manager_mismatch) == 0 with input as object.union(host("535.104.05", []), {"nvidia": {"nvswitches": 4, "fabric_manager": "535.104.05"}})
	count(nvidia.fabric_manager_mismatch) == 0 with input as host("535.104.05", [])
}

test_proprietary_on_blackwell if {
	h := object.union(host("570.133.20", []), {"nvidia": {"flavor": "proprietary", "gpus": [{"bus_id": "0000:1b:00.0", "model": "NVIDIA B200"}]}})
	count(nvidia.proprietary_module_unsupported) == 1 with input as h
}

test_proprietary_on_h100_is_fine if {
	h := object.union(host("535.104.05", []), {"nvidia": {"flavor": "proprietary", "gpus": [{"bus_id": "0000:1b:00.0", "model": "NVIDIA H100 80GB HBM3"}]}})
	count(nvidia.proprietary_module_unsupported) == 0 with input as h
}

persistence_host(persistenced, gpus) := object.union(host("550.90.07", []), {"nvidia": {"persistenced": persistenced, "gpus": gpus}})

two_gpus(mode0, mode1) := [
	object.union({"bus_id": "0000:1b:00.0", "model": "NVIDIA H100 80GB HBM3"}, mode0),
	object.union({"bus_id": "0000:43:00.0", "model": ""}, mode1),
]

test_persistence_mode_off_per_gpu if {
	fs := nvidia.persistence_mode_off with input as persistence_host(false, two_gpus({"persistence_mode": "disabled"}, {"persistence_mode": "disabled"}))
	count(fs) == 2
	{f.msg | some f in fs} == {
		"GPU 0000:1b:00.0 (NVIDIA H100 80GB HBM3) has persistence mode off and no nvidia-persistenced runs: the driver tears the GPU down after every job",
		"GPU 0000:43:00.0 has persistence mode off and no nvidia-persistenced runs: the driver tears the GPU down after every job",
	}
	{f.evidence | some f in fs} == {
		["nvidia.gpus.0.persistence_mode", "nvidia.persistenced"],
		["nvidia.gpus.1.persistence_mode", "nvidia.persistenced"],
	}
}

test_persistence_mode_off_only_the_disabled_gpu if {
	[f] := [f | some f in nvidia.persistence_mode_off with input as persistence_host(false, two_gpus({"persistence_mode": "enabled"}, {"persistence_mode": "disabled"}))]
	f.evidence == ["nvidia.gpus.1.persistence_mode", "nvidia.persistenced"]
}

test_persistence_mode_off_not_with_daemon if {
	count(nvidia.persistence_mode_off) == 0 with input as persistence_host(true, two_gpus({"persistence_mode": "disabled"}, {"persistence_mode": "disabled"}))
}

# nvidia-smi -pm 1 without the daemon, as on an H200 node.
test_persistence_mode_enabled_without_daemon if {
	count(nvidia.persistence_mode_off) == 0 with input as persistence_host(false, [{"bus_id": "0000:00:06.0", "model": "NVIDIA H200", "persistence_mode": "enabled"}])
}

# No nvidia-smi ran (a fixture root, --no-exec, [N/A]): no daemon alone is not a finding.
test_persistence_mode_unknown if {
	count(nvidia.persistence_mode_off) == 0 with input as persistence_host(false, two_gpus({}, {}))
	count(nvidia.persistence_mode_off) == 0 with input as persistence_host(false, [])
	no_fact := {"nvidia": object.remove(persistence_host(false, two_gpus({"persistence_mode": "disabled"}, {})).nvidia, ["persistenced"])}
	count(nvidia.persistence_mode_off) == 0 with input as no_fact
}
