package fleetaudit.fleet_rules.net_test

import data.fleetaudit.fleet_rules.net

ib(mtu) := {"operstate": "up", "mtu": mtu, "type": 32, "rdma": ["mlx5_0"]}

host(name, interfaces) := {"host": name, "net": {"present": true, "interfaces": interfaces}}

fleet(hosts) := {"fleet": "gpu", "hosts": hosts}

test_minority_mtu_is_reported if {
	hosts := [
		host("a", {"ib0": ib(2044), "eno1": {"operstate": "up", "mtu": 1500, "type": 1}}),
		host("b", {"ib0": ib(2044)}),
		host("c", {"ib0": ib(2044)}),
		host("d", {"ib0": ib(4092), "ib1": ib(4092)}),
	]
	[f] := [f | some f in net.mtu_skew with input as fleet(hosts)]
	f.host == "d"
	f.msg == "RDMA-facing MTU InfiniBand:4092 differs from the fleet's majority InfiniBand:2044 (3 of 4 hosts)"
	f.evidence == ["net.interfaces"]
}

# Interfaces not facing RDMA do not count; hosts without any, or whose
# interfaces were not read, do not vote.
test_only_rdma_facing_interfaces_vote if {
	hosts := [
		host("a", {"ib0": ib(2044), "eno1": {"operstate": "up", "mtu": 9000, "type": 1}}),
		host("b", {"ib0": ib(2044), "eno1": {"operstate": "up", "mtu": 1500, "type": 1}}),
		host("c", {"eno1": {"operstate": "up", "mtu": 1500, "type": 1}}),
		{"host": "d", "net": {"present": false, "interfaces": {}}},
	]
	count(net.mtu_skew) == 0 with input as fleet(hosts)
}

test_link_types_compared_like_for_like if {
	roce := {"operstate": "up", "mtu": 9000, "type": 1, "rdma": ["mlx5_8"]}
	hosts := [
		host("a", {"ib0": ib(2044), "ens9": roce}),
		host("b", {"ib0": ib(2044), "ens9": roce}),
		host("c", {"ib0": ib(2044), "ens9": object.union(roce, {"mtu": 1500})}),
	]
	[f] := [f | some f in net.mtu_skew with input as fleet(hosts)]
	f.host == "c"
	contains(f.msg, "Ethernet:1500, InfiniBand:2044 differs from the fleet's majority Ethernet:9000, InfiniBand:2044")
}

test_no_consensus if {
	hosts := [host("a", {"ib0": ib(2044)}), host("b", {"ib0": ib(4092)})]
	findings := net.mtu_skew with input as fleet(hosts)
	count(findings) == 2
	every f in findings {
		f.basis == "none"
	}
}
