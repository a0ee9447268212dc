# Pods on RDMA nodes that do not ask for the node's RDMA devices (same
# package as pods.rego).
package fleetaudit.rules.pods

efa_resource := "vpc.amazonaws.com/efa"

node_efa := count([d | some d in input.rdma.devices; d.driver == "efa"])

# RDMA access a pod has without a device-plugin resource: privileged, or
# /dev/infiniband mounted from the host.
rdma_access(p) if {
	some c in containers(p)
	rdma_container(c)
}

rdma_access(p) if {
	some c in containers(p)
	privileged(c)
}

pod_efa(p) := sum([to_number(object.get(c, ["resources", "limits", efa_resource], 0)) | some c in containers(p)])

rdma_resource_problem(p) := "requests no RDMA device (no rdma/*, */ib, */efa or nvidia.com/hostdev resource, not privileged, no /dev/infiniband mount)" if {
	not rdma_access(p)
} else := sprintf("requests %d of the node's %d EFA devices", [pod_efa(p), node_efa]) if {
	node_efa > 0
	pod_efa(p) > 0
	pod_efa(p) < node_efa
}

# METADATA
# title: Multi-GPU or NCCL pod without the node's RDMA devices
# description: >-
#   A pod that requests more than one GPU or sets NCCL_* variables runs on a
#   node with RDMA or EFA devices, but requests no RDMA resource (rdma/*,
#   */ib, */efa, nvidia.com/hostdev), is not privileged and mounts no
#   /dev/infiniband; or it requests fewer EFA devices
#   (vpc.amazonaws.com/efa) than the node has. Without the devices in its
#   container NCCL falls back to TCP sockets silently; with some of them it
#   uses a fraction of the node's bandwidth. An MPIJob launcher is not
#   reported. On a node whose RDMA devices are all EFA the fix sets the
#   container's vpc.amazonaws.com/efa limit to the node's count (and adds
#   IPC_LOCK); elsewhere the resource name is the device plugin's
#   configuration, and there is no fix.
# related_resources:
# - ref: https://github.com/Mellanox/k8s-rdma-shared-dev-plugin
#   description: RDMA resources for pods
# - ref: https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html
#   description: vpc.amazonaws.com/efa - request every EFA device of the instance
# custom:
#   id: pod-rdma-resource-missing
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Request the node's RDMA resource in the pod spec (the RDMA device
#     plugin's resource name, or vpc.amazonaws.com/efa equal to the
#     instance's EFA device count), with IPC_LOCK.
#   facts:
#   - pods
#   - rdma.devices
pod_rdma_resource_missing contains f if {
	count(input.rdma.devices) > 0
	some i, p in input.pods
	not launcher(p)
	gpu_or_nccl(p)
	why := rdma_resource_problem(p)
	f := object.union(
		{
			"msg": sprintf("pod %s uses NCCL or several GPUs on a node with RDMA devices but %s", [name(p), why]),
			"evidence": [pod_path(i), "rdma.devices"],
		},
		efa_fix(p),
	)
}

# The fix where every RDMA device of the node is EFA: the node's EFA count
# as the vpc.amazonaws.com/efa limit of the one container that requests
# EFA, or else of the pod's one GPU container, with IPC_LOCK where it lacks
# it (registering memory with the NIC needs it; pod-rdma-without-ipc-lock).
# Elsewhere the resource name is the RDMA device plugin's configuration,
# which no snapshot holds; several candidate containers, or an EFA request
# (which an extended resource's limit must equal), leave the choice to
# people: no fix.
efa_fix(p) := {"fix": object.union(
	{"kind": "pod", "container": c.name, "resources": {"limits": {efa_resource: format_int(node_efa, 10)}}},
	ipc_lock_fix(c),
)} if {
	node_efa > 0
	node_efa == count(input.rdma.devices)
	targets := efa_targets(p)
	count(targets) == 1
	some c in targets
	not c.resources.requests[efa_resource]
} else := {}

efa_targets(p) := [c | some c in containers(p); c.resources.limits[efa_resource]] if {
	pod_efa(p) > 0
} else := [c | some c in containers(p); gpu_container(c)]

ipc_lock_fix(c) := {} if ipc_lock(c)

else := {} if privileged(c)

else := {"add_capabilities": ["IPC_LOCK"]}
