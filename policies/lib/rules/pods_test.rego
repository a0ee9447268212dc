package fleetaudit.rules.pods_test

import data.fleetaudit.rules.pods

gpu_container(gpus, extra) := object.union({"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "resources": {"limits": {"nvidia.com/gpu": gpus, "memory": "512Gi"}}}, extra)

pod(name, spec) := {"metadata": {"name": name, "namespace": "ml"}, "spec": spec}

shm_volume(empty_dir) := {"name": "dshm", "emptyDir": empty_dir}

shm_mount := {"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}

test_shm_unbounded if {
	p := pod("w0", {"containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({"medium": "Memory"})]})
	[f] := [f | some f in pods.pod_shm_unbounded with input as {"pods": [p]}]
	f.evidence == ["pods.0"]
}

# Duplicate mounts or volumes (invalid, but a manifest under review can hold
# them) give one answer, the first, not an evaluation conflict.
test_shm_duplicates_take_the_first if {
	twice := {"volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "other", "mountPath": "/dev/shm"}]}
	p := pod("w0", {"containers": [gpu_container(8, twice)], "volumes": [shm_volume({"medium": "Memory"}), shm_volume({"medium": "Memory", "sizeLimit": "1Gi"})]})
	[f] := [f | some f in pods.pod_shm_unbounded with input as {"pods": [p]}]
	f.evidence == ["pods.0"]
}

test_shm_bounded_hostpath_or_disk_pass if {
	bounded := pod("w0", {"containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({"medium": "Memory", "sizeLimit": "64Gi"})]})
	disk := pod("w1", {"containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({})]})
	host := pod("w2", {"containers": [gpu_container(8, shm_mount)], "volumes": [{"name": "dshm", "hostPath": {"path": "/dev/shm"}}]})
	count(pods.pod_shm_unbounded) == 0 with input as {"pods": [bounded, disk, host]}
	count(pods.pod_shm_missing) == 0 with input as {"pods": [bounded, disk, host]}
}

test_shm_missing_for_multi_gpu if {
	p := pod("w0", {"containers": [gpu_container(8, {})]})
	count(pods.pod_shm_missing) == 1 with input as {"pods": [p]}
}

test_shm_missing_not_with_host_ipc_or_launcher if {
	ipc := pod("w0", {"hostIPC": true, "containers": [gpu_container(8, {})]})
	launcher := {"metadata": {"name": "l", "labels": {"training.kubeflow.org/job-role": "launcher"}}, "spec": {"containers": [{"name": "l", "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}]}}
	single := pod("w1", {"containers": [gpu_container(1, {})]})
	count(pods.pod_shm_missing) == 0 with input as {"pods": [ipc, launcher, single]}
}

test_rdma_without_ipc_lock if {
	c := gpu_container(8, {"resources": {"limits": {"rdma/rdma_shared_device_a": 1, "memory": "1Gi"}}})
	count(pods.pod_rdma_without_ipc_lock) == 1 with input as {"pods": [pod("w0", {"containers": [c]})]}
	locked := object.union(c, {"securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}})
	count(pods.pod_rdma_without_ipc_lock) == 0 with input as {"pods": [pod("w0", {"containers": [locked]})]}
	priv := object.union(c, {"securityContext": {"privileged": true}})
	count(pods.pod_rdma_without_ipc_lock) == 0 with input as {"pods": [pod("w0", {"containers": [priv]})]}
}

test_rdma_via_infiniband_mount if {
	c := {"name": "x", "volumeMounts": [{"name": "ib", "mountPath": "/dev/infiniband"}]}
	count(pods.pod_rdma_without_ipc_lock) == 1 with input as {"pods": [pod("w0", {"containers": [c]})]}
}

test_memory_limit_missing if {
	c := {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": 8}}}
	count(pods.pod_memory_limit_missing) == 1 with input as {"pods": [pod("w0", {"containers": [c]})]}
	count(pods.pod_memory_limit_missing) == 0 with input as {"pods": [pod("w0", {"containers": [gpu_container(8, {})]})]}
}

test_pod_debug_env if {
	c := gpu_container(8, {"env": [{"name": "NCCL_IB_DISABLE", "value": "1"}, {"name": "NCCL_ALGO", "value": "Ring"}, {"name": "NCCL_COLLNET_ENABLE", "value": "1"}]})
	findings := pods.pod_nccl_debug_env with input as {"pods": [pod("w0", {"containers": [c]})]}
	{f.severity | some f in findings} == {"high", "medium"}
	count(findings) == 2
}

# Each debug variable's finding deletes that variable from its container.
test_pod_debug_env_fix_removes_the_variable if {
	c := gpu_container(8, {"env": [{"name": "NCCL_ALGO", "value": "Ring"}, {"name": "NCCL_PROTO", "value": "LL128"}]})
	findings := pods.pod_nccl_debug_env with input as {"pods": [pod("w0", {"containers": [c]})]}
	{f.fix | some f in findings} == {
		{"kind": "pod", "container": "trainer", "remove_env": ["NCCL_ALGO"]},
		{"kind": "pod", "container": "trainer", "remove_env": ["NCCL_PROTO"]},
	}
}

# NCCL_IB_DISABLE from a ConfigMap: its value is unknown, 0 is the default.
test_pod_debug_env_ib_disable_value_from if {
	c := gpu_container(8, {"env": [{"name": "NCCL_IB_DISABLE", "valueFrom": {"configMapKeyRef": {"name": "nccl", "key": "ib"}}}]})
	count(pods.pod_nccl_debug_env) == 0 with input as {"pods": [pod("w0", {"containers": [c]})]}
}

test_pod_template_of_a_workload if {
	job := {"kind": "Job", "metadata": {"name": "train"}, "spec": {"template": {"spec": {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}}
	count(pods.pod_memory_limit_missing) == 1 with input as {"pods": [job]}
}

# Half the memory limit: the size at or above the limit would be
# pod-shm-exceeds-memory-limit.
test_shm_unbounded_fix_sizes_the_volume_by_the_memory_limit if {
	p := pod("w0", {"containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({"medium": "Memory"})]})
	[f] := [f | some f in pods.pod_shm_unbounded with input as {"pods": [p]}]
	f.fix == {"kind": "pod", "volume_size_limit": {"volume": "dshm", "size": "256Gi"}}

	# A manifest's number of bytes is a quantity too.
	bytes := pod("w0", {"containers": [gpu_container(8, object.union(shm_mount, {"resources": {"limits": {"memory": 68719476736}}}))], "volumes": [shm_volume({"medium": "Memory"})]})
	[g] := [g | some g in pods.pod_shm_unbounded with input as {"pods": [bytes]}]
	g.fix.volume_size_limit == {"volume": "dshm", "size": "32Gi"}

	# The fixed pod is not pod-shm-exceeds-memory-limit.
	fixed := pod("w0", {"containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({"medium": "Memory", "sizeLimit": f.fix.volume_size_limit.size})]})
	count(pods.pod_shm_exceeds_memory_limit) == 0 with input as {"pods": [fixed]}
	count(pods.pod_shm_unbounded) == 0 with input as {"pods": [fixed]}
}

# Two containers share the volume: one finding, sized by the lower limit.
# Without a limit, or with one a template fills in, no fix.
test_shm_unbounded_fix_takes_the_lowest_limit if {
	other := object.union(gpu_container(8, shm_mount), {"name": "sidecar", "resources": {"limits": {"memory": "8Gi"}}})
	p := pod("w0", {"containers": [gpu_container(8, shm_mount), other], "volumes": [shm_volume({"medium": "Memory"})]})
	[f] := [f | some f in pods.pod_shm_unbounded with input as {"pods": [p]}]
	f.fix.volume_size_limit.size == "4Gi"
	nolimit := {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": 8}}, "volumeMounts": shm_mount.volumeMounts}
	q := pod("w1", {"containers": [nolimit], "volumes": [shm_volume({"medium": "Memory"})]})
	[g] := [g | some g in pods.pod_shm_unbounded with input as {"pods": [q]}]
	not g.fix
	templated := object.union(gpu_container(8, shm_mount), {"resources": {"limits": {"memory": "${MEM}"}}})
	r := pod("w2", {"containers": [templated], "volumes": [shm_volume({"medium": "Memory"})]})
	[h] := [h | some h in pods.pod_shm_unbounded with input as {"pods": [r]}]
	not h.fix
}

# A pod-level limit (spec.resources) bounds a container without its own.
test_shm_unbounded_fix_from_the_pod_level_limit if {
	c := {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": 8}}, "volumeMounts": shm_mount.volumeMounts}
	p := pod("w0", {"resources": {"limits": {"memory": "1000G"}}, "containers": [c], "volumes": [shm_volume({"medium": "Memory"})]})
	[f] := [f | some f in pods.pod_shm_unbounded with input as {"pods": [p]}]
	f.fix.volume_size_limit.size == "500G"
}

test_rdma_without_ipc_lock_fix_names_the_container if {
	c := object.union(gpu_container(8, {"resources": {"limits": {"rdma/ib": 1}}}), {"name": "worker"})
	[f] := [f | some f in pods.pod_rdma_without_ipc_lock with input as {"pods": [pod("w0", {"containers": [c]})]}]
	f.fix == {"kind": "pod", "container": "worker", "add_capabilities": ["IPC_LOCK"]}
}

test_memory_limit_fix_is_the_request if {
	c := {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"memory": "900Gi"}}}
	[f] := [f | some f in pods.pod_memory_limit_missing with input as {"pods": [pod("w0", {"containers": [c]})]}]
	f.fix == {"kind": "pod", "container": "trainer", "resources": {"limits": {"memory": "900Gi"}}}

	# No request: the limit is the job's to choose.
	d := {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": 8}}}
	[g] := [g | some g in pods.pod_memory_limit_missing with input as {"pods": [pod("w0", {"containers": [d]})]}]
	not g.fix
}

# Templated manifests: the count is unknown, not absent.
test_templated_gpu_count_is_a_gpu_container if {
	for_envsubst := {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": "$GPU_PER_NODE"}}}
	for_helm := {"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": "{{ .Values.gpus }}"}}}
	count(pods.pod_memory_limit_missing) == 2 with input as {"pods": [pod("w0", {"containers": [for_envsubst]}), pod("w1", {"containers": [for_helm]})]}
	[f] := [f | some f in pods.pod_shm_missing with input as {"pods": [pod("w0", {"containers": [for_envsubst]})]}]
	contains(f.msg, "GPU count left to the template: nvidia.com/gpu: $GPU_PER_NODE")
}

test_gpu_count_known_zero_or_absent_is_no_gpu_container if {
	zero := {"name": "cpu", "resources": {"limits": {"nvidia.com/gpu": 0}}}
	zero_text := {"name": "cpu", "resources": {"limits": {"nvidia.com/gpu": "0"}}}
	none := {"name": "cpu", "resources": {"limits": {"cpu": "4"}}}
	input_pods := {"pods": [pod("w0", {"containers": [zero, zero_text, none]})]}
	count(pods.pod_memory_limit_missing) == 0 with input as input_pods
	count(pods.pod_shm_missing) == 0 with input as input_pods
}

test_gpu_in_requests_or_as_mig_slice_or_quoted if {
	requests := {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "8"}}}
	mig := {"name": "b", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}
	amd := {"name": "c", "resources": {"limits": {"amd.com/gpu": 2}}}
	count(pods.pod_memory_limit_missing) == 3 with input as {"pods": [pod("w0", {"containers": [requests, mig, amd]})]}

	# "8" in requests is several GPUs: /dev/shm matters.
	count(pods.pod_shm_missing) == 1 with input as {"pods": [pod("w0", {"containers": [requests]})]}
}

test_templated_rdma_resource_needs_ipc_lock if {
	c := {"name": "w", "resources": {"limits": {"vpc.amazonaws.com/efa": "${EFA_PER_NODE}"}}}
	count(pods.pod_rdma_without_ipc_lock) == 1 with input as {"pods": [pod("w0", {"containers": [c]})]}
	zero := {"name": "w", "resources": {"limits": {"rdma/ib": 0}}}
	count(pods.pod_rdma_without_ipc_lock) == 0 with input as {"pods": [pod("w0", {"containers": [zero]})]}
}
