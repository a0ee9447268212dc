package fleetaudit.rules.rdma_test

import data.fleetaudit.rules.rdma

port(state, layer, rate) := {"state": state, "link_layer": layer, "rate": sprintf("%d Gb/sec", [rate]), "rate_gbps": rate}

dev(p) := {"driver": "mlx5_core", "ports": {"1": p}}

# The fixture's story: three at 400, one trained at 200, one down.
fabric := {"rdma": {"devices": {
	"mlx5_0": dev(port("ACTIVE", "InfiniBand", 400)),
	"mlx5_1": dev(port("ACTIVE", "InfiniBand", 400)),
	"mlx5_2": dev(port("ACTIVE", "InfiniBand", 400)),
	"mlx5_3": dev(port("ACTIVE", "InfiniBand", 200)),
	"mlx5_4": dev(port("DOWN", "InfiniBand", 10)),
	"mlx5_8": dev(port("ACTIVE", "Ethernet", 200)),
}}}

test_down_and_slow_ports if {
	findings := rdma.rdma_port_degraded with input as fabric
	{f.msg | some f in findings} == {
		"RDMA port mlx5_3/1 (InfiniBand): rate 200 Gb/sec where the host's other InfiniBand ports run 400 Gb/s",
		"RDMA port mlx5_4/1 (InfiniBand): state DOWN",
	}
	{f.evidence[0] | some f in findings} == {"rdma.devices.mlx5_3.ports.1", "rdma.devices.mlx5_4.ports.1"}
}

# Other link layers are not compared with InfiniBand (the RoCE port at 200).
test_healthy_ports_pass if {
	healthy := {"rdma": {"devices": {
		"mlx5_0": dev(port("ACTIVE", "InfiniBand", 400)),
		"mlx5_1": dev(port("ACTIVE", "InfiniBand", 400)),
		"mlx5_2": dev(port("ACTIVE", "InfiniBand", 400)),
		"mlx5_8": dev(port("ACTIVE", "Ethernet", 200)),
	}}}
	count(rdma.rdma_port_degraded) == 0 with input as healthy
}

# Two ports, or no 60% majority: no rate is the odd one out.
test_no_majority_no_rate_finding if {
	two := {"rdma": {"devices": {"a": dev(port("ACTIVE", "InfiniBand", 400)), "b": dev(port("ACTIVE", "InfiniBand", 200))}}}
	count(rdma.rdma_port_degraded) == 0 with input as two
	split := {"rdma": {"devices": {
		"a": dev(port("ACTIVE", "InfiniBand", 400)), "b": dev(port("ACTIVE", "InfiniBand", 400)),
		"c": dev(port("ACTIVE", "InfiniBand", 200)), "d": dev(port("ACTIVE", "InfiniBand", 200)),
	}}}
	count(rdma.rdma_port_degraded) == 0 with input as split

	# 3 of 5 is 60%: a majority.
	five := {"rdma": {"devices": {
		"a": dev(port("ACTIVE", "InfiniBand", 400)), "b": dev(port("ACTIVE", "InfiniBand", 400)),
		"c": dev(port("ACTIVE", "InfiniBand", 400)), "d": dev(port("ACTIVE", "InfiniBand", 200)),
		"e": dev(port("ACTIVE", "InfiniBand", 200)),
	}}}
	count(rdma.rdma_port_degraded) == 2 with input as five
}

test_min_rate_param if {
	all_low := {"rdma": {"devices": {"a": dev(port("ACTIVE", "InfiniBand", 200)), "b": dev(port("ACTIVE", "InfiniBand", 200))}}}
	count(rdma.rdma_port_degraded) == 0 with input as all_low
	findings := rdma.rdma_port_degraded with input as all_low with data.fleetaudit.params as {"rdma_min_rate_gbps": 400}
	count(findings) == 2
	every f in findings {
		contains(f.msg, "below the fleet's minimum 400 Gb/s")
	}

	# At the minimum is fine.
	count(rdma.rdma_port_degraded) == 0 with input as all_low with data.fleetaudit.params as {"rdma_min_rate_gbps": 200}
}

# A port whose state could not be read is the collection-error rule's.
test_unread_state_is_not_reported if {
	count(rdma.rdma_port_degraded) == 0 with input as {"rdma": {"devices": {"mlx5_0": dev(port("", "InfiniBand", 0))}}}
}
