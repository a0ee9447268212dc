# Memory-backed /dev/shm sized at or above the memory its writer may use
# (same package as pods.rego).
package fleetaudit.rules.pods

# A memory quantity in bytes, as Kubernetes writes it: a number, with a
# binary (Ki..Ei) or decimal (k, M..E) suffix or an exponent. A templated
# ($MEM, {{ .Values.mem }}) or malformed one is unknown: undefined.
quantity_bytes(q) := q if {
	is_number(q)
	q >= 0
}

quantity_bytes(q) := units.parse(q) if {
	is_string(q)
	regex.match(`^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE]|[eE][0-9]+)?$`, q)
}

# The memory limits that bound a container: its own, and the pod-level
# limit (spec.resources, KEP-2837) that every container shares. Each as
# written and in bytes.
memory_limits(p, c) := [{"text": quantity(q), "bytes": b} |
	some q in [object.get(c, ["resources", "limits", "memory"], null), object.get(spec(p), ["resources", "limits", "memory"], null)]
	q != null
	b := quantity_bytes(q)
]

# A limit is written but cannot be read (a template fills it in).
memory_limit_unknown(p, c) if {
	some q in [object.get(c, ["resources", "limits", "memory"], null), object.get(spec(p), ["resources", "limits", "memory"], null)]
	q != null
	not quantity_bytes(q)
}

# The lowest limit that bounds the container, when one is known (the
# container's own where the two are equal).
memory_bound(p, c) := [x | some x in limits; x.bytes == low][0] if {
	limits := memory_limits(p, c)
	count(limits) > 0
	low := min([x.bytes | some x in limits])
}

# Containers that mount the volume at /dev/shm.
shm_writers(p, vol_name) := [c | some c in containers(p); shm_mount(c).name == vol_name]

# METADATA
# title: Memory-backed /dev/shm as large as the container's memory limit
# description: >-
#   A container mounts an emptyDir with medium Memory at /dev/shm whose
#   sizeLimit is at or above the container's memory limit (its own, or the
#   pod-level spec.resources limit, the lower of the two). The kubelet sizes
#   the tmpfs at min(sizeLimit, the pod's memory limit, the node's allocatable
#   memory), and every page written to it is charged to the memory cgroup of
#   the container that wrote it: a job that fills its /dev/shm (NCCL's shared
#   memory transport, DataLoader workers) reaches its memory limit before the
#   volume is full, and the kernel OOM-kills the container instead of the
#   write failing with ENOSPC. A sizeLimit that is templated or not a
#   quantity, a hostPath /dev/shm, a disk-backed emptyDir and an MPIJob
#   launcher are not reported; a missing sizeLimit is pod-shm-unbounded.
# related_resources:
# - ref: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#memory-backed-emptydir
#   description: memory-backed emptyDir pages count against the pod's and the container's memory limit
# - ref: https://github.com/kubernetes/enhancements/tree/master/keps/sig-node/1967-size-memory-backed-volumes
#   description: KEP-1967 - the tmpfs is sized min(node allocatable, pod allocatable, sizeLimit); writes are charged to the writing container
# - ref: https://kubernetes.io/docs/tasks/configure-pod-container/assign-pod-level-resources/
#   description: pod-level memory limits (spec.resources)
# - ref: https://man7.org/linux/man-pages/man5/tmpfs.5.html
#   description: tmpfs(5) - the default size is 50% of memory, the ratio the fix applies to the container's limit
# custom:
#   id: pod-shm-exceeds-memory-limit
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Lower the /dev/shm emptyDir's sizeLimit below the memory limit of every
#     container that mounts it, leaving the rest of the limit for the
#     processes themselves (fleetaudit's fix uses half the lowest limit, the
#     ratio tmpfs uses for memory by default), or raise the memory limit.
#   facts:
#   - pods
pod_shm_exceeds_memory_limit contains f if {
	some i, p in input.pods
	not launcher(p)
	some v in object.get(spec(p), "volumes", [])
	v.emptyDir.medium == "Memory"
	size := quantity_bytes(v.emptyDir.sizeLimit)
	reached := [sprintf("%s (%s)", [c.name, l.text]) |
		some c in shm_writers(p, v.name)
		l := memory_bound(p, c)
		size >= l.bytes
	]
	count(reached) > 0
	f := object.union(
		{
			"msg": sprintf("pod %s mounts a memory emptyDir at /dev/shm (volume %s) with sizeLimit %s, at or above the memory limit of %s: filling it OOM-kills the container", [name(p), v.name, quantity(v.emptyDir.sizeLimit), concat(", ", reached)]),
			"evidence": [pod_path(i)],
		},
		shm_fix(p, v.name),
	)
}

# half_size is half of n bytes, rounded down, as a quantity: in the
# largest unit that divides it, else in bytes.
half_size(n) := size_text(floor(n / 2))

size_units := [
	["Ei", 1152921504606846976], ["Pi", 1125899906842624], ["Ti", 1099511627776],
	["Gi", 1073741824], ["Mi", 1048576], ["Ki", 1024],
	["E", 1000000000000000000], ["P", 1000000000000000], ["T", 1000000000000],
	["G", 1000000000], ["M", 1000000], ["k", 1000],
]

size_text(n) := sprintf("%d%s", [n / u[1], u[0]]) if {
	fits := [x | some x in size_units; n >= x[1]; n % x[1] == 0]
	largest := max([x[1] | some x in fits])
	some u in fits
	u[1] == largest
} else := format_int(n, 10)
