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
