package fleetaudit.rules.inventory_test

import data.fleetaudit.rules.inventory

test_unassigned_host if {
	[f] := [f | some f in inventory.unknown_fleet with input as {"host": "h1"} with data.fleetaudit.fleet as ""]
	f.msg == "host h1 matches no fleet profile; only rules for all fleets audited it"
}

test_assigned_host_passes if {
	count(inventory.unknown_fleet) == 0 with input as {"host": "h1"} with data.fleetaudit.fleet as "gpu-training"
}

gpu_host := {
	"host": "trn-01",
	"nvidia": {"present": true, "gpus": [{"bus_id": "0000:1b:00.0"}, {"bus_id": "0000:43:00.0"}]},
}

test_unassigned_gpu_host_is_high if {
	[f] := [f | some f in inventory.unknown_fleet with input as gpu_host with data.fleetaudit.fleet as ""]
	f.severity == "high"
	f.evidence == ["host", "labels", "nvidia.present", "nvidia.gpus"]
	f.msg == "host trn-01 matches no fleet profile; only rules for all fleets audited it, though it has GPUs (2 found): no GPU rule ran"
}

test_gpus_alone_make_it_high if {
	[f] := [f | some f in inventory.unknown_fleet with input as {"host": "h", "nvidia": {"gpus": [{}]}} with data.fleetaudit.fleet as ""]
	f.severity == "high"
	f.evidence == ["host", "labels", "nvidia.gpus"]
}

test_driver_without_gpu_list_is_high if {
	[f] := [f | some f in inventory.unknown_fleet with input as {"host": "h", "nvidia": {"present": true}} with data.fleetaudit.fleet as ""]
	f.severity == "high"
	f.evidence == ["host", "labels", "nvidia.present"]
}

test_unassigned_host_without_gpus_keeps_metadata_severity if {
	every h in [
		{"host": "h1"},
		{"host": "h1", "nvidia": {"present": false, "gpus": []}},
		{"host": "h1", "nvidia": {}},
	] {
		[f] := [f | some f in inventory.unknown_fleet with input as h with data.fleetaudit.fleet as ""]
		not "severity" in object.keys(f)
		f.evidence == ["host", "labels"]
	}
}

test_assigned_gpu_host_passes if {
	count(inventory.unknown_fleet) == 0 with input as gpu_host with data.fleetaudit.fleet as "gpu-training"
}
