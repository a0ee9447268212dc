package fleetaudit.lib.skew_test

import data.fleetaudit.lib.skew

# Groups 0..4 of one host each unless a test says otherwise.
ones(n) := skew.fleet_input([{} | some i in numbers.range(0, n); i < n])

test_baseline_wins_over_majority if {
	exp := skew.expected({0: "1", 1: "1", 2: "2"}, "2") with input as ones(3)
	exp == {"basis": "baseline", "value": "2"}
}

test_majority_at_sixty_percent if {
	exp := skew.expected({0: "1", 1: "1", 2: "1", 3: "2", 4: "2"}, null) with input as ones(5)
	exp == {"basis": "majority", "value": "1", "hosts": 3, "of": 5}
}

# A group counts as many hosts as it holds.
test_groups_weigh_by_their_hosts if {
	fleet := skew.fleet_input([{"count": 3}, {"count": 2}])
	exp := skew.expected({0: "1", 1: "2"}, null) with input as fleet
	exp == {"basis": "majority", "value": "1", "hosts": 3, "of": 5}
	f := skew.finding(1, "2", exp, "NCCL", ["libraries.nccl"])
	f.group == 1
	f.msg == "NCCL 2 differs from the fleet's majority 1 (3 of 5 hosts)"
	fleet2 := skew.fleet_input([{"count": 2}, {"count": 2}])
	even := skew.expected({0: "1", 1: "2"}, null) with input as fleet2
	even.basis == "none"
}

test_no_consensus_below_sixty_percent if {
	exp := skew.expected({0: "1", 1: "1", 2: "2", 3: "2", 4: "3"}, null) with input as ones(5)
	exp.basis == "none"
	exp.distribution == {"1": 2, "2": 2, "3": 1}
	exp.of == 5
}

test_empty_fleet_has_no_consensus if {
	exp := skew.expected({}, null) with input as ones(0)
	exp.basis == "none"
}

test_finding_only_for_deviating_groups if {
	exp := skew.expected({0: "1", 1: "1", 2: "2"}, null) with input as ones(3)
	f := skew.finding(2, "2", exp, "NCCL", ["libraries.nccl"])
	f.group == 2
	f.expected == "1"
	f.basis == "majority"
	f.msg == "NCCL 2 differs from the fleet's majority 1 (2 of 3 hosts)"
	not skew.finding(0, "1", exp, "NCCL", ["libraries.nccl"])
}

# Hosts without the fact do not vote; the message says how many report it
# and how large the fleet is.
test_hosts_without_the_fact_are_counted_apart if {
	fleet := skew.fleet_input([{"count": 7}, {}, {"count": 2}])
	exp := skew.expected({0: "1", 1: "2"}, null) with input as fleet
	exp == {"basis": "majority", "value": "1", "hosts": 7, "of": 8, "fleet": 10}
	f := skew.finding(1, "2", exp, "NCCL", ["libraries.nccl"])
	f.msg == "NCCL 2 differs from the fleet's majority 1 (7 of the 8 hosts that report it; 10 in the fleet)"
	none := skew.expected({0: "1", 1: "2"}, null) with input as skew.fleet_input([{}, {}, {}])
	g := skew.finding(0, "1", none, "NCCL", [])
	g.msg == "no consensus on NCCL across the fleet: this host has 1; 1 on 1 of 2, 2 on 1 of 2 (2 of the fleet's 3 hosts report it; a majority needs 60% of them)"
}

test_no_consensus_finding_names_distribution if {
	exp := skew.expected({0: "1", 1: "2"}, null) with input as ones(2)
	f := skew.finding(0, "1", exp, "NCCL", [])
	f.basis == "none"
	not f.expected
	f.msg == "no consensus on NCCL across the fleet: this host has 1; 1 on 1 of 2, 2 on 1 of 2 (a majority needs 60% of hosts)"
}

# Votes count keys, not hosts: the worker pods of a job.
test_votes_count_keys if {
	exp := skew.from_distribution(skew.votes({"w0": "a", "w1": "a", "w2": "b"}), null)
	exp == {"basis": "majority", "value": "a", "hosts": 2, "of": 3}
}
