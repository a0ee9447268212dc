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

test_nchannels_message_says_it_still_applies if {
	[f] := [f | some f in nccl.nccl_nchannels_superseded with input as host({"NCCL_MAX_NCHANNELS": "8"}, ib)]
	contains(f.msg, "still applies it on top of them")

	# 2.17.1 is the first release with NCCL_MIN/MAX_CTAS; 2.16.5 the last without.
	count(nccl.nccl_nchannels_superseded) == 1 with input as object.union(host({"NCCL_MAX_NCHANNELS": "8"}, ib), {"libraries": {"nccl": [{"version": "2.17.1"}]}})
	count(nccl.nccl_nchannels_superseded) == 0 with input as object.union(host({"NCCL_MAX_NCHANNELS": "8"}, ib), {"libraries": {"nccl": [{"version": "2.16.5"}]}})
}

efa_ok := {"NCCL_SOCKET_IFNAME": "ens32", "FI_EFA_USE_DEVICE_RDMA": "1"}

test_efa_fi_provider if {
	[f] := [f | some f in nccl.efa_nccl_env with input as host(object.union(efa_ok, {"FI_PROVIDER": "tcp"}), efa)]
	contains(f.msg, "FI_PROVIDER=tcp")
	f.fix == {"kind": "nccl-env", "set": {"FI_PROVIDER": "efa"}}
	count(nccl.efa_nccl_env) == 1 with input as host(object.union(efa_ok, {"FI_PROVIDER": "^efa"}), efa)
	every v in ["efa", "efa,tcp", "EFA", "tcp, efa"] {
		count(nccl.efa_nccl_env) == 0 with input as host(object.union(efa_ok, {"FI_PROVIDER": v}), efa)
	}

	# Not an EFA host: FI_PROVIDER is not this rule's business.
	count(nccl.efa_nccl_env) == 0 with input as host({"FI_PROVIDER": "verbs"}, ib)
}

pod(labels, env) := {
	"metadata": {"name": "w-0", "namespace": "ml", "labels": labels},
	"spec": {"containers": [{"name": "trainer", "env": env}]},
}

good_env := [{"name": "FI_PROVIDER", "value": "efa"}, {"name": "NCCL_COLLNET_ENABLE", "value": "0"}, {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"}]

# A value from a ConfigMap, Secret or field is not in the pod spec: not
# judged (it read as "" before, which is no provider).
test_efa_pod_env_value_from_not_judged if {
	from := [{"name": "FI_PROVIDER", "valueFrom": {"configMapKeyRef": {"name": "fabric", "key": "provider"}}}, {"name": "FI_EFA_USE_DEVICE_RDMA", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['rdma']"}}}]
	count(nccl.efa_nccl_env) == 0 with input as object.union(host(efa_ok, efa), {"pods": [pod({}, from)]})
}

test_efa_pod_env if {
	bad := [{"name": "FI_PROVIDER", "value": "tcp"}, {"name": "NCCL_COLLNET_ENABLE", "value": "1"}, {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "0"}]
	h := object.union(host(efa_ok, efa), {"pods": [pod({}, bad)]})
	[f] := [f | some f in nccl.efa_nccl_env with input as h]
	f.evidence == ["rdma.devices", "pods.0"]
	f.msg == "EFA host: container trainer of pod ml/w-0 sets FI_EFA_USE_DEVICE_RDMA=0 (GPUDirect off); FI_PROVIDER=tcp (not the EFA provider); NCCL_COLLNET_ENABLE=1 (EFA has no CollNet)"
	f.fix == {"kind": "pod", "container": "trainer", "env": {"FI_PROVIDER": "efa", "NCCL_COLLNET_ENABLE": "0", "FI_EFA_USE_DEVICE_RDMA": "1"}}

	# The fix sets only what is wrong.
	one := array.concat(good_env, [{"name": "FI_PROVIDER", "value": "^efa"}])
	[g] := [g | some g in nccl.efa_nccl_env with input as object.union(host(efa_ok, efa), {"pods": [pod({}, one)]})]
	g.fix == {"kind": "pod", "container": "trainer", "env": {"FI_PROVIDER": "efa"}}

	# Right values, a launcher, or an InfiniBand host: nothing.
	count(nccl.efa_nccl_env) == 0 with input as object.union(host(efa_ok, efa), {"pods": [pod({}, good_env)]})
	count(nccl.efa_nccl_env) == 0 with input as object.union(host(efa_ok, efa), {"pods": [pod({"training.kubeflow.org/job-role": "launcher"}, bad)]})
	count(nccl.efa_nccl_env) == 0 with input as object.union(host(efa_ok, ib), {"pods": [pod({}, bad)]})
}

efa4 := {"rdmap16s24": {"driver": "efa"}, "rdmap16s25": {"driver": "efa"}}

with_net(h, plugins) := object.union(h, {"libraries": {"nccl_net": plugins}})

test_efa_ofi_plugin_missing if {
	[f] := [f | some f in nccl.efa_ofi_plugin_missing with input as with_net(host({}, efa4), [])]
	f.msg == "EFA devices are present and NCCL 2.21.5 is installed, but no NCCL net plugin (libnccl-net*.so): NCCL falls back to TCP sockets"
	f.evidence == ["rdma.devices", "libraries.nccl", "libraries.nccl_net"]

	# A plugin; InfiniBand (NCCL's own transport); no host NCCL; a snapshot
	# from before plugins were collected: nothing.
	count(nccl.efa_ofi_plugin_missing) == 0 with input as with_net(host({}, efa4), [{"version": "unknown", "path": "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"}])
	count(nccl.efa_ofi_plugin_missing) == 0 with input as with_net(host({}, ib), [])
	count(nccl.efa_ofi_plugin_missing) == 0 with input as object.union(with_net(host({}, efa4), []), {"libraries": {"nccl": []}})
	count(nccl.efa_ofi_plugin_missing) == 0 with input as host({}, efa4)
}

vm(env, rdma) := object.union(host(env, rdma), {
	"iommu": {"hypervisor": true},
	"nvidia": {"gpus": [{"bus_id": "0000:10:1c.0"}, {"bus_id": "0000:10:1d.0"}]},
	"libraries": {"nccl_net": []},
})

test_nccl_topology_hidden if {
	[f] := [f | some f in nccl.nccl_topology_hidden with input as vm({}, ib)]
	f.msg == "virtual machine with 2 GPUs and RDMA devices: NCCL_TOPO_FILE is not set, so NCCL cannot see the PCI topology behind the hypervisor"
	f.evidence == ["iommu.hypervisor", "nccl_config.effective"]

	# Set to a file that is missing.
	h := object.union(vm({"NCCL_TOPO_FILE": "/etc/nccl/topo.xml"}, ib), {"nccl_config": {"topo_file_missing": true}})
	[g] := [g | some g in nccl.nccl_topology_hidden with input as h]
	contains(g.msg, "NCCL_TOPO_FILE=/etc/nccl/topo.xml does not exist")
	g.evidence == ["iommu.hypervisor", "nccl_config.effective.NCCL_TOPO_FILE", "nccl_config.topo_file_missing"]

	# Set and present; bare metal; no RDMA; no GPUs: nothing.
	count(nccl.nccl_topology_hidden) == 0 with input as vm({"NCCL_TOPO_FILE": "/etc/nccl/topo.xml"}, ib)
	count(nccl.nccl_topology_hidden) == 0 with input as object.union(vm({}, ib), {"iommu": {"hypervisor": false}})
	count(nccl.nccl_topology_hidden) == 0 with input as object.union(object.remove(vm({}, ib), ["rdma"]), {"rdma": {"devices": {}}})
	count(nccl.nccl_topology_hidden) == 0 with input as object.union(object.remove(vm({}, ib), ["nvidia"]), {"nvidia": {"gpus": []}})
}

# aws-ofi-nccl brings the EC2 topology: an EFA VM with it is not reported,
# one without it is.
test_topology_from_the_efa_plugin if {
	count(nccl.nccl_topology_hidden) == 0 with input as object.union(vm({}, efa4), {"libraries": {"nccl_net": [{"version": "unknown"}]}})
	count(nccl.nccl_topology_hidden) == 1 with input as vm({}, efa4)
}
