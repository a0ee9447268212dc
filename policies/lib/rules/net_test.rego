package fleetaudit.rules.net_test

import data.fleetaudit.rules.net

ifc(state) := {"operstate": state, "mtu": 1500, "type": 1}

host(ifname) := {
	"net": {"present": true, "interfaces": {
		"lo": ifc("unknown"), "eno1": ifc("up"), "ib0": ifc("up"), "ib1": ifc("down"), "docker0": ifc("down"),
	}},
	"nccl_config": {"effective": {"NCCL_SOCKET_IFNAME": ifname}},
}

test_unmatched_name if {
	[f] := [f | some f in net.nccl_socket_ifname_unmatched with input as host("eth0")]
	f.msg == "NCCL_SOCKET_IFNAME=eth0 matches none of the running interfaces (eno1, ib0, lo)"
	f.evidence == ["nccl_config.effective.NCCL_SOCKET_IFNAME", "net.interfaces"]
}

# NCCL's syntax: prefixes, =exact, ^exclude, :port.
test_matching_values_pass if {
	every v in ["eno", "eno1", "=eno1", "ib", "eth0,eno1", "ib0:5000", "^docker,lo", "^=lo", "e"] {
		count(net.nccl_socket_ifname_unmatched) == 0 with input as host(v)
	}
}

test_unmatched_values if {
	every v in ["=eno", "ib1", "docker", "^eno,ib,lo", "^=eno1,lo", "=ib0:1,ib1"] {
		count(net.nccl_socket_ifname_unmatched) == 1 with input as object.union(host(v), {"net": {"interfaces": {"ib0": ifc("down")}}})
	}
}

# Interfaces not read (a config repo), or no setting: nothing.
test_needs_the_interfaces if {
	count(net.nccl_socket_ifname_unmatched) == 0 with input as object.union(host("eth0"), {"net": {"present": false, "interfaces": {}}})
	count(net.nccl_socket_ifname_unmatched) == 0 with input as {"net": host("x").net, "nccl_config": {"effective": {}}}
}

pod(host_network, value, labels) := {
	"metadata": {"name": "w-0", "namespace": "ml", "labels": labels},
	"spec": {"hostNetwork": host_network, "containers": [{"name": "trainer", "env": [{"name": "NCCL_SOCKET_IFNAME", "value": value}]}]},
}

test_pod_on_host_network if {
	h := object.union(host("eno1"), {"pods": [pod(true, "eth0", {})]})
	[f] := [f | some f in net.nccl_socket_ifname_unmatched with input as h]
	f.evidence == ["pods.0", "net.interfaces"]
	contains(f.msg, "container trainer of pod ml/w-0 (host network) sets NCCL_SOCKET_IFNAME=eth0")

	# Its own network namespace, a match, or a launcher: nothing.
	count(net.nccl_socket_ifname_unmatched) == 0 with input as object.union(host("eno1"), {"pods": [pod(false, "eth0", {})]})
	count(net.nccl_socket_ifname_unmatched) == 0 with input as object.union(host("eno1"), {"pods": [pod(true, "ib", {})]})
	count(net.nccl_socket_ifname_unmatched) == 0 with input as object.union(host("eno1"), {"pods": [pod(true, "eth0", {"training.kubeflow.org/job-role": "launcher"})]})
}

# "=" applies to the whole list, as NCCL strips it once: "=lo,=eno1" asks
# for an interface literally named "=eno1".
test_exact_applies_to_the_list if {
	count(net.nccl_socket_ifname_unmatched) == 1 with input as host("=ib1,=eno1")
	count(net.nccl_socket_ifname_unmatched) == 0 with input as host("=ib1,eno1")
}
