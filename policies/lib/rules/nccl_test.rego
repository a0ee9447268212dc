package fleetaudit.rules.nccl_test

import data.fleetaudit.rules.nccl

host(env, rdma) := {"nccl_config": {"effective": env}, "rdma": {"devices": rdma}, "libraries": {"nccl": [{"version": "2.21.5"}]}}

ib := {"mlx5_0": {"driver": "mlx5_core"}}

efa := {"rdmap16s27": {"driver": "efa"}}

test_ib_disable_with_rdma_is_high if {
	[f] := [f | some f in nccl.nccl_debug_env with input as host({"NCCL_IB_DISABLE": "1"}, ib)]
	f.severity == "high"
	f.evidence == ["nccl_config.effective.NCCL_IB_DISABLE"]
}

test_debug_knobs_are_medium if {
	findings := nccl.nccl_debug_env with input as host({"NCCL_ALGO": "Ring", "NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5"}, ib)
	{[f.evidence[0], f.severity] | some f in findings} == {["nccl_config.effective.NCCL_ALGO", "medium"]}
}

test_proto_ll128_is_high if {
	[f] := [f | some f in nccl.nccl_debug_env with input as host({"NCCL_PROTO": "LL128"}, ib)]
	f.severity == "high"
}

test_nchannels_superseded if {
	count(nccl.nccl_nchannels_superseded) == 1 with input as host({"NCCL_MIN_NCHANNELS": "16"}, ib)
	h := object.union(host({"NCCL_MIN_NCHANNELS": "16"}, ib), {"libraries": {"nccl": [{"version": "2.14.3"}]}})
	count(nccl.nccl_nchannels_superseded) == 0 with input as h
}

test_efa_without_socket_ifname if {
	[f] := [f | some f in nccl.efa_nccl_env with input as host({"FI_EFA_USE_DEVICE_RDMA": "1"}, efa)]
	contains(f.msg, "NCCL_SOCKET_IFNAME is unset")
}

test_efa_configured_passes if {
	count(nccl.efa_nccl_env) == 0 with input as host({"NCCL_SOCKET_IFNAME": "ens32", "FI_EFA_USE_DEVICE_RDMA": "1"}, efa)
}

test_collnet_on_infiniband_is_fine if {
	count(nccl.efa_nccl_env) == 0 with input as host({"NCCL_COLLNET_ENABLE": "1"}, ib)
	count(nccl.nccl_debug_env) == 0 with input as host({"NCCL_COLLNET_ENABLE": "1"}, ib)
}

test_ib_disable_fix_sets_the_default if {
	[f] := [f | some f in nccl.nccl_debug_env with input as host({"NCCL_IB_DISABLE": "1"}, ib)]
	f.fix == {"kind": "nccl-env", "set": {"NCCL_IB_DISABLE": "0"}}

	# The fixed value is not a finding.
	count(nccl.nccl_debug_env) == 0 with input as host({"NCCL_IB_DISABLE": "0"}, ib)
}

# NCCL_ALGO has no neutral value: only removing it helps, which set cannot do.
test_debug_knob_without_a_neutral_value_has_no_fix if {
	[f] := [f | some f in nccl.nccl_debug_env with input as host({"NCCL_ALGO": "Ring"}, ib)]
	not f.fix
}

test_efa_fix_sets_only_the_wrong_variables if {
	h := host({"NCCL_SOCKET_IFNAME": "ens32", "NCCL_COLLNET_ENABLE": "1", "FI_EFA_USE_DEVICE_RDMA": "0"}, efa)
	[f] := [f | some f in nccl.efa_nccl_env with input as h]
	f.fix == {"kind": "nccl-env", "set": {"NCCL_COLLNET_ENABLE": "0", "FI_EFA_USE_DEVICE_RDMA": "1"}}
	h2 := host({"NCCL_SOCKET_IFNAME": "ens32", "NCCL_COLLNET_ENABLE": "1", "FI_EFA_USE_DEVICE_RDMA": "1"}, efa)
	[g] := [g | some g in nccl.efa_nccl_env with input as h2]
	g.fix == {"kind": "nccl-env", "set": {"NCCL_COLLNET_ENABLE": "0"}}

	# The fixed values are not a finding.
	count(nccl.efa_nccl_env) == 0 with input as host({"NCCL_SOCKET_IFNAME": "ens32", "NCCL_COLLNET_ENABLE": "0", "FI_EFA_USE_DEVICE_RDMA": "1"}, efa)
}

# The interface NCCL_SOCKET_IFNAME needs is in no snapshot.
test_efa_without_socket_ifname_has_no_fix if {
	[f] := [f | some f in nccl.efa_nccl_env with input as host({"NCCL_COLLNET_ENABLE": "1"}, efa)]
	not f.fix
}
