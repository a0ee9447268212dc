package fleetaudit.rules.podrdma_test

import data.fleetaudit.rules.pods

ib := {"mlx5_0": {"driver": "mlx5_core"}}

efa := {"rdmap16s24": {"driver": "efa"}, "rdmap16s25": {"driver": "efa"}, "rdmap16s26": {"driver": "efa"}, "rdmap16s27": {"driver": "efa"}}

pod(limits, extra) := {
	"metadata": {"name": "w-0", "namespace": "ml", "labels": {}},
	"spec": {"containers": [object.union({"name": "c", "resources": {"limits": object.union({"nvidia.com/gpu": "8"}, limits)}}, extra)]},
}

on(rdma, p) := {"rdma": {"devices": rdma}, "pods": [p]}

test_no_rdma_resource if {
	[f] := [f | some f in pods.pod_rdma_resource_missing with input as on(ib, pod({}, {}))]
	f.msg == "pod ml/w-0 uses NCCL or several GPUs on a node with RDMA devices but requests no RDMA device (no rdma/*, */ib, */efa or nvidia.com/hostdev resource, not privileged, no /dev/infiniband mount)"
	f.evidence == ["pods.0", "rdma.devices"]
}

test_rdma_access_passes if {
	count(pods.pod_rdma_resource_missing) == 0 with input as on(ib, pod({"rdma/ib": "1"}, {}))
	count(pods.pod_rdma_resource_missing) == 0 with input as on(ib, pod({"nvidia.com/hostdev": "8"}, {}))
	count(pods.pod_rdma_resource_missing) == 0 with input as on(ib, pod({}, {"securityContext": {"privileged": true}}))
	count(pods.pod_rdma_resource_missing) == 0 with input as on(ib, pod({}, {"volumeMounts": [{"name": "ib", "mountPath": "/dev/infiniband"}]}))
}

# Both sides of the EFA count: 4 of 4 is fine, 2 of 4 is not.
test_efa_count if {
	count(pods.pod_rdma_resource_missing) == 0 with input as on(efa, pod({"vpc.amazonaws.com/efa": "4"}, {}))
	[f] := [f | some f in pods.pod_rdma_resource_missing with input as on(efa, pod({"vpc.amazonaws.com/efa": 2}, {}))]
	contains(f.msg, "requests 2 of the node's 4 EFA devices")
	count(pods.pod_rdma_resource_missing) == 1 with input as on(efa, pod({}, {}))
}

# No RDMA on the node, one GPU without NCCL, or a launcher: nothing.
test_not_reported if {
	count(pods.pod_rdma_resource_missing) == 0 with input as on({}, pod({}, {}))
	count(pods.pod_rdma_resource_missing) == 0 with input as on(ib, pod({"nvidia.com/gpu": "1"}, {}))
	launcher := object.union(pod({}, {}), {"metadata": {"labels": {"training.kubeflow.org/job-role": "launcher"}}})
	count(pods.pod_rdma_resource_missing) == 0 with input as on(ib, launcher)
}

# On an EFA-only node: the node's count on the container, with IPC_LOCK.
test_efa_fix if {
	[f] := [f | some f in pods.pod_rdma_resource_missing with input as on(efa, pod({"vpc.amazonaws.com/efa": 2}, {}))]
	f.fix == {"kind": "pod", "container": "c", "resources": {"limits": {"vpc.amazonaws.com/efa": "4"}}, "add_capabilities": ["IPC_LOCK"]}
	ipc := {"securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}
	[g] := [g | some g in pods.pod_rdma_resource_missing with input as on(efa, pod({}, ipc))]
	g.fix == {"kind": "pod", "container": "c", "resources": {"limits": {"vpc.amazonaws.com/efa": "4"}}}
}

# No fix: an InfiniBand or mixed node (the resource name is the device
# plugin's), an EFA request the limit must equal, two GPU containers.
test_efa_fix_not_guessed if {
	[a] := [f | some f in pods.pod_rdma_resource_missing with input as on(ib, pod({}, {}))]
	not a.fix
	[b] := [f | some f in pods.pod_rdma_resource_missing with input as on(object.union(efa, ib), pod({"vpc.amazonaws.com/efa": 2}, {}))]
	not b.fix
	requests := {"resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": 2}, "requests": {"vpc.amazonaws.com/efa": 2}}}
	[c] := [f | some f in pods.pod_rdma_resource_missing with input as on(efa, pod({}, requests))]
	not c.fix
	two := {"metadata": {"name": "w-0", "namespace": "ml"}, "spec": {"containers": [
		{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "4"}}},
		{"name": "b", "resources": {"limits": {"nvidia.com/gpu": "4"}}},
	]}}
	[d] := [f | some f in pods.pod_rdma_resource_missing with input as on(efa, two)]
	not d.fix
}
