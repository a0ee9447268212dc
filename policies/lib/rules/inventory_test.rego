package fleetaudit.rules.inventory_test

import data.fleetaudit.rules.inventory

test_unassigned_host if {
	[f] := [f | some f in inventory.unknown_fleet with input as {"host": "h1"} with data.fleetaudit.fleet as ""]
	f.msg == "host h1 matches no fleet profile; only rules for all fleets audited it"
}

test_assigned_host_passes if {
	count(inventory.unknown_fleet) == 0 with input as {"host": "h1"} with data.fleetaudit.fleet as "gpu-training"
}
