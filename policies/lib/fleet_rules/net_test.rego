package fleetaudit.fleet_rules.net_test

import data.fleetaudit.fleet_rules.net
import data.fleetaudit.lib.skew

ib(mtu) := {"operstate": "up", "mtu": mtu, "type": 32, "rdma": ["mlx5_0"]}

host(interfaces) := {"net": {"present": true, "interfaces": interfaces}}

test_minority_mtu_is_reported if {
	hosts := [
		host({"ib0": ib(2044), "eno1": {"operstate": "up", "mtu": 1500, "type": 1}}),
		host({"ib0": ib(2044)}),
		host({"ib0": ib(2044)}),
		host({"ib0": ib(4092), "ib1": ib(4092)}),
	]
	[f] := [f | some f in net.mtu_skew with input as skew.fleet_input(hosts)]
	f.group == 3
	f.msg == "RDMA-facing MTU InfiniBand:4092 differs from the fleet's majority InfiniBand:2044 (3 of 4 hosts)"
	# Each RDMA-facing interface's MTU, whose file is the finding's location.
	f.evidence == ["net.interfaces.ib0.mtu", "net.interfaces.ib1.mtu"]
}

# Interfaces not facing RDMA do not count; hosts without any, or whose
# interfaces were not read, do not vote.
test_only_rdma_facing_interfaces_vote if {
	hosts := [
		host({"ib0": ib(2044), "eno1": {"operstate": "up", "mtu": 9000, "type": 1}}),
		host({"ib0": ib(2044), "eno1": {"operstate": "up", "mtu": 1500, "type": 1}}),
		host({"eno1": {"operstate": "up", "mtu": 1500, "type": 1}}),
		{"net": {"present": false, "interfaces": {}}},
	]
	count(net.mtu_skew) == 0 with input as skew.fleet_input(hosts)
}

test_link_types_compared_like_for_like if {
	roce := {"operstate": "up", "mtu": 9000, "type": 1, "rdma": ["mlx5_8"]}
	hosts := [
		host({"ib0": ib(2044), "ens9": roce}),
		host({"ib0": ib(2044), "ens9": roce}),
		host({"ib0": ib(2044), "ens9": object.union(roce, {"mtu": 1500})}),
	]
	[f] := [f | some f in net.mtu_skew with input as skew.fleet_input(hosts)]
	f.group == 2
	contains(f.msg, "Ethernet:1500, InfiniBand:2044 differs from the fleet's majority Ethernet:9000, InfiniBand:2044")
	f.evidence == ["net.interfaces.ens9.mtu", "net.interfaces.ib0.mtu"]
}

test_no_consensus if {
	hosts := [host({"ib0": ib(2044)}), host({"ib0": ib(4092)})]
	findings := net.mtu_skew with input as skew.fleet_input(hosts)
	count(findings) == 2
	every f in findings {
		f.basis == "none"
	}
}
