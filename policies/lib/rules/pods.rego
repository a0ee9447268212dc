# Pods scheduled on the host (or pod templates from manifests), as the
# Kubernetes API returns them, in input.pods.
package fleetaudit.rules.pods

# The pod spec of a Pod, or of a workload's pod template.
spec(p) := p.spec.template.spec if p.spec.template.spec

else := p.spec

name(p) := sprintf("%s/%s", [object.get(p, ["metadata", "namespace"], "default"), object.get(p, ["metadata", "name"], "?")])

# A finding citing pod_path(i) shows the pod narrowed to the fields these
# rules read (policies/podevidence.go): keep the two in step.
pod_path(i) := sprintf("pods.%d", [i])

containers(p) := array.concat(object.get(spec(p), "containers", []), object.get(spec(p), "initContainers", []))

# A container's extended resources: limits, and requests a manifest may
# give alone (the API server would refuse it; a manifest in a repo is not
# validated).
resources(c) := object.union(object.get(c, ["resources", "requests"], {}), object.get(c, ["resources", "limits"], {}))

# Resource names that are GPUs: whole NVIDIA GPUs, shared (time-sliced)
# ones, MIG slices, AMD GPUs.
gpu_resource(r) if regex.match(`^(nvidia\.com/(gpu|gpu\.shared|mig-.+)|amd\.com/gpu)$`, r)

# A count as written: a number, or a string of digits. Anything else was
# left to a template ($GPU_PER_NODE, {{ .Values.gpus }}): unknown, not 0.
known_count(q) := q if is_number(q)

else := to_number(q) if {
	is_string(q)
	regex.match(`^[0-9]+$`, q)
}

zero_count(q) if known_count(q) == 0

# The container requests GPUs: a GPU resource whose count is not known to
# be 0. A templated count makes a GPU container whatever it turns out to be.
gpu_container(c) if {
	some r, q in resources(c)
	gpu_resource(r)
	not zero_count(q)
}

gpu_count(c) := sum([n | some r, q in resources(c); gpu_resource(r); n := known_count(q)])

# GPU counts left to a template, as written ("nvidia.com/gpu: $GPU_PER_NODE").
templated_gpus(p) := {sprintf("%s: %v", [r, q]) |
	some c in containers(p)
	some r, q in resources(c)
	gpu_resource(r)
	not known_count(q)
}

multi_gpu(p) if sum([gpu_count(c) | some c in containers(p)]) > 1

# A GPU count the template fills in is read as the job's, per node: a
# training template parameterised by it is meant for several.
multi_gpu(p) if count(templated_gpus(p)) > 0

nccl_pod(p) if {
	some c in containers(p)
	some e in object.get(c, "env", [])
	startswith(e.name, "NCCL_")
}

# A launcher of an MPIJob starts the workers and runs no collectives.
launcher(p) if p.metadata.labels["training.kubeflow.org/job-role"] == "launcher"

launcher(p) if p.metadata.labels["mpi-job-role"] == "launcher"

# The first mount at /dev/shm and the first volume of a name: the API
# server rejects duplicates, but a manifest in review can hold them, and two
# answers would be an evaluation conflict that loses every pod rule.
shm_mount(c) := ms[0] if {
	ms := [m | some m in object.get(c, "volumeMounts", []); m.mountPath == "/dev/shm"]
	count(ms) > 0
}

volume(p, vol_name) := vs[0] if {
	vs := [v | some v in object.get(spec(p), "volumes", []); v.name == vol_name]
	count(vs) > 0
}

# METADATA
# title: /dev/shm in memory without a size limit
# description: >-
#   A container mounts an emptyDir with medium Memory at /dev/shm and the
#   volume has no sizeLimit. NCCL's shared-memory transport and DataLoader
#   workers grow it without bound inside the pod's memory, until the node's
#   memory pressure evicts or OOM-kills unrelated pods. A hostPath /dev/shm or
#   a disk-backed emptyDir is not reported.
# related_resources:
# - ref: https://kubernetes.io/docs/concepts/storage/volumes/#emptydir
#   description: emptyDir, medium Memory and sizeLimit
# custom:
#   id: pod-shm-unbounded
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Give the /dev/shm emptyDir a sizeLimit that fits the job and stays below
#     the memory limit of every container that mounts it, since its pages are
#     charged to that limit (fleetaudit's fix: half the lowest limit).
#   facts:
#   - pods
pod_shm_unbounded contains f if {
	some i, p in input.pods
	some c in containers(p)
	m := shm_mount(c)
	v := volume(p, m.name)
	v.emptyDir.medium == "Memory"
	not v.emptyDir.sizeLimit
	f := object.union(
		{
			"msg": sprintf("pod %s mounts a memory emptyDir at /dev/shm (volume %s) without sizeLimit", [name(p), m.name]),
			"evidence": [pod_path(i)],
		},
		shm_fix(p, m.name),
	)
}

# The size limit a fix gives the volume: half the lowest memory limit of
# the containers that mount it (their own or the pod-level one). Pages of a
# memory emptyDir are charged to the memory limit of the container writing
# them, so a size at or above that limit OOM-kills the container before the
# volume fills (pod-shm-exceeds-memory-limit); half leaves the rest to the
# processes, the share of memory tmpfs takes by default (tmpfs(5):
# size=50%). A container without a limit, or with one a template fills in,
# leaves the size to the job, which no snapshot knows: no fix. The pod is
# found by the finding's evidence, whose source names the manifest file and
# line.
shm_fix(p, vol_name) := {"fix": {"kind": "pod", "volume_size_limit": {"volume": vol_name, "size": half_size(low)}}} if {
	writers := shm_writers(p, vol_name)
	count(writers) > 0
	every c in writers {
		memory_bound(p, c)
		not memory_limit_unknown(p, c)
	}
	low := min([memory_bound(p, c).bytes | some c in writers])
	floor(low / 2) > 0
} else := {}

# A resource quantity as a string; a manifest may write a number of bytes.
quantity(q) := q if is_string(q)

else := format_int(q, 10)

# METADATA
# title: Multi-GPU or NCCL pod with the default 64 MiB /dev/shm
# description: >-
#   A pod that requests more than one GPU, or sets NCCL_* variables, mounts
#   nothing at /dev/shm and does not share the host's IPC namespace, so it gets
#   the container runtime's 64 MiB /dev/shm. NCCL's shared-memory transport
#   then fails ("Error while creating shared memory segment") or falls back.
#   A GPU count left to a template (nvidia.com/gpu: $GPU_PER_NODE or
#   {{ .Values.gpus }}) counts as several: the template is meant for a
#   node's GPUs. An MPIJob launcher is not reported.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
#   description: NCCL troubleshooting, shared memory
# custom:
#   id: pod-shm-missing
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Mount an emptyDir (medium Memory, with a sizeLimit) at /dev/shm, or run
#     the pod with hostIPC where policy allows.
#   facts:
#   - pods
pod_shm_missing contains f if {
	some i, p in input.pods
	not launcher(p)
	gpu_or_nccl(p)
	not spec(p).hostIPC
	count([c | some c in containers(p); shm_mount(c)]) == 0
	f := {
		"msg": sprintf("pod %s uses NCCL or several GPUs with the default 64 MiB /dev/shm%s", [name(p), templated_text(p)]),
		"evidence": [pod_path(i)],
	}
}

templated_text(p) := sprintf(" (GPU count left to the template: %s)", [concat(", ", sort(templated_gpus(p)))]) if {
	count(templated_gpus(p)) > 0
} else := ""

gpu_or_nccl(p) if multi_gpu(p)

gpu_or_nccl(p) if nccl_pod(p)

rdma_resource(c) if {
	some r, q in resources(c)
	regex.match(`^rdma/|/efa$|/ib$|^nvidia.com/hostdev`, r)
	not zero_count(q)
}

mounts_infiniband(c) if {
	some m in object.get(c, "volumeMounts", [])
	startswith(m.mountPath, "/dev/infiniband")
}

ipc_lock(c) if "IPC_LOCK" in object.get(c, ["securityContext", "capabilities", "add"], [])

privileged(c) if c.securityContext.privileged == true

# METADATA
# title: RDMA container without IPC_LOCK
# description: >-
#   A container requests an RDMA resource (rdma/*, */efa, */ib) or mounts
#   /dev/infiniband, is not privileged, and does not add the IPC_LOCK
#   capability. Registering memory with the NIC pins it, which needs IPC_LOCK
#   (or an unlimited memlock the container cannot raise): ibv_reg_mr fails and
#   NCCL falls back to sockets or aborts.
# related_resources:
# - ref: https://github.com/Mellanox/k8s-rdma-shared-dev-plugin
#   description: RDMA shared device plugin; pods need IPC_LOCK
# - ref: https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#set-capabilities-for-a-container
#   description: adding capabilities to a container
# custom:
#   id: pod-rdma-without-ipc-lock
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Add IPC_LOCK to the container's securityContext.capabilities.add.
#   facts:
#   - pods
pod_rdma_without_ipc_lock contains f if {
	some i, p in input.pods
	some c in containers(p)
	rdma_container(c)
	not privileged(c)
	not ipc_lock(c)
	f := {
		"msg": sprintf("container %s of pod %s uses RDMA without the IPC_LOCK capability", [c.name, name(p)]),
		"evidence": [pod_path(i)],
		"fix": {"kind": "pod", "container": c.name, "add_capabilities": ["IPC_LOCK"]},
	}
}

rdma_container(c) if rdma_resource(c)

rdma_container(c) if mounts_infiniband(c)

# METADATA
# title: GPU container without a memory limit
# description: >-
#   A container that requests GPUs (nvidia.com/gpu, nvidia.com/mig-*,
#   amd.com/gpu, in limits or requests, with any count but 0, a templated
#   one included) has no memory limit. Pinned host buffers
#   (NCCL, CUDA host allocations, DataLoader workers) then grow until the node
#   runs out of memory and the kernel OOM-kills whatever it picks, often
#   another job.
# related_resources:
# - ref: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/
#   description: container resource limits
# custom:
#   id: pod-memory-limit-missing
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Set resources.limits.memory on every GPU container.
#   facts:
#   - pods
pod_memory_limit_missing contains f if {
	some i, p in input.pods
	some c in containers(p)
	gpu_container(c)
	not c.resources.limits.memory
	f := object.union(
		{
			"msg": sprintf("GPU container %s of pod %s has no memory limit", [c.name, name(p)]),
			"evidence": [pod_path(i)],
		},
		memory_fix(c),
	)
}

# A container that requests memory gets that as its limit: the scheduler
# already reserved it on the node. Without a request the right limit is the
# job's to say: no fix.
memory_fix(c) := {"fix": {"kind": "pod", "container": c.name, "resources": {"limits": {"memory": quantity(c.resources.requests.memory)}}}} if {
	c.resources.requests.memory
} else := {}

debug_knobs := {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_IB_DISABLE"}

# NCCL_IB_DISABLE=0 is the default, not a debug setting; one from valueFrom
# (a ConfigMap, Secret or field) has a value the pod spec does not hold.
ib_enabled(e) if {
	e.name == "NCCL_IB_DISABLE"
	e.value != "1"
}

ib_enabled(e) if {
	e.name == "NCCL_IB_DISABLE"
	e.valueFrom
}

pod_debug_severity(e) := "high" if {
	e.name == "NCCL_IB_DISABLE"
	e.value == "1"
} else := "high" if {
	e.name == "NCCL_PROTO"
	contains(lower(e.value), "ll128")
	not startswith(e.value, "^")
} else := "medium"

# METADATA
# title: Debug-only NCCL setting in a pod
# description: >-
#   A container sets an NCCL variable the NCCL documentation describes as a
#   debugging aid that should generally not be set in production, as in
#   nccl-debug-env: NCCL_IB_DISABLE=1 or NCCL_PROTO forcing LL128 is high;
#   NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_ALGO, NCCL_PROTO, NCCL_BUFFSIZE and
#   NCCL_NTHREADS are medium. NCCL_COLLNET_ENABLE is not a debug knob (SHARP).
#   The fix deletes the variable's entry from the container's env, so NCCL
#   takes its default; fleetaudit refuses where envFrom or a $(NAME)
#   reference would see the change.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL environment variables
# custom:
#   id: pod-nccl-debug-env
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Remove the variable from the pod spec; set it only while debugging.
#   facts:
#   - pods
pod_nccl_debug_env contains f if {
	some i, p in input.pods
	some c in containers(p)
	some e in object.get(c, "env", [])
	e.name in debug_knobs
	not ib_enabled(e)
	f := {
		"msg": sprintf("container %s of pod %s sets %s=%s, a debugging setting", [c.name, name(p), e.name, object.get(e, "value", "")]),
		"evidence": [pod_path(i)],
		"severity": pod_debug_severity(e),
		"fix": {"kind": "pod", "container": c.name, "remove_env": [e.name]},
	}
}
