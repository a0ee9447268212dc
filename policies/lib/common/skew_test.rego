package fleetaudit.lib.skew_test

import data.fleetaudit.lib.skew

test_baseline_wins_over_majority if {
	skew.expected({"a": "1", "b": "1", "c": "2"}, "2") == {"basis": "baseline", "value": "2"}
}

test_majority_at_sixty_percent if {
	exp := skew.expected({"a": "1", "b": "1", "c": "1", "d": "2", "e": "2"}, null)
	exp == {"basis": "majority", "value": "1", "hosts": 3, "of": 5}
}

test_no_consensus_below_sixty_percent if {
	exp := skew.expected({"a": "1", "b": "1", "c": "2", "d": "2", "e": "3"}, null)
	exp.basis == "none"
	exp.distribution == {"1": 2, "2": 2, "3": 1}
	exp.of == 5
}

test_empty_fleet_has_no_consensus if {
	skew.expected({}, null).basis == "none"
}

test_finding_only_for_deviating_hosts if {
	exp := skew.expected({"a": "1", "b": "1", "c": "2"}, null)
	f := skew.finding("c", "2", exp, "NCCL", ["libraries.nccl"])
	f.host == "c"
	f.expected == "1"
	f.basis == "majority"
	f.msg == "NCCL 2 differs from the fleet's majority 1 (2 of 3 hosts)"
	not skew.finding("a", "1", exp, "NCCL", ["libraries.nccl"])
}

test_no_consensus_finding_names_distribution if {
	exp := skew.expected({"a": "1", "b": "2"}, null)
	f := skew.finding("a", "1", exp, "NCCL", [])
	f.basis == "none"
	not f.expected
	f.msg == "no consensus on NCCL across the fleet: this host has 1; 1 on 1 of 2, 2 on 1 of 2 (a majority needs 60% of hosts)"
}
