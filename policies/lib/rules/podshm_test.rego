package fleetaudit.rules.pods_test

import data.fleetaudit.rules.pods

shm_pod(name, limit, size_limit) := pod(name, {
	"containers": [gpu_container(8, object.union(shm_mount, {"resources": {"limits": {"nvidia.com/gpu": 8, "memory": limit}}}))],
	"volumes": [shm_volume({"medium": "Memory", "sizeLimit": size_limit})],
})

# At the limit and above it, in any unit: the container OOMs before the
# volume fills.
test_shm_exceeds_at_or_above_the_limit if {
	[f] := [f | some f in pods.pod_shm_exceeds_memory_limit with input as {"pods": [shm_pod("w0", "64Gi", "64Gi")]}]
	f.evidence == ["pods.0"]
	contains(f.msg, "sizeLimit 64Gi, at or above the memory limit of trainer (64Gi)")
	f.fix == {"kind": "pod", "volume_size_limit": {"volume": "dshm", "size": "32Gi"}}
	count(pods.pod_shm_exceeds_memory_limit) == 1 with input as {"pods": [shm_pod("w0", "64Gi", "1Ti")]}
	count(pods.pod_shm_exceeds_memory_limit) == 1 with input as {"pods": [shm_pod("w0", "64G", "64Gi")]}
	count(pods.pod_shm_exceeds_memory_limit) == 1 with input as {"pods": [shm_pod("w0", 68719476736, "64Gi")]}
	count(pods.pod_shm_exceeds_memory_limit) == 1 with input as {"pods": [shm_pod("w0", "64Gi", "68719476736")]}
}

# Below the limit, one byte or one unit short: not reported.
test_shm_exceeds_not_below_the_limit if {
	count(pods.pod_shm_exceeds_memory_limit) == 0 with input as {"pods": [shm_pod("w0", "64Gi", "68719476735")]}
	count(pods.pod_shm_exceeds_memory_limit) == 0 with input as {"pods": [shm_pod("w0", "64Gi", "64G")]}
	count(pods.pod_shm_exceeds_memory_limit) == 0 with input as {"pods": [shm_pod("w0", "512Gi", "64Gi")]}
}

# What this rule does not judge: no sizeLimit (pod-shm-unbounded), a
# disk-backed emptyDir or a hostPath, no memory limit, a templated or
# malformed quantity, an MPIJob launcher.
test_shm_exceeds_not_without_the_facts if {
	unbounded := pod("w0", {"containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({"medium": "Memory"})]})
	disk := pod("w1", {"containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({"sizeLimit": "1Ti"})]})
	host := pod("w2", {"containers": [gpu_container(8, shm_mount)], "volumes": [{"name": "dshm", "hostPath": {"path": "/dev/shm"}}]})
	nolimit := pod("w3", {
		"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": 8}}, "volumeMounts": shm_mount.volumeMounts}],
		"volumes": [shm_volume({"medium": "Memory", "sizeLimit": "1Ti"})],
	})
	templated_limit := shm_pod("w4", "${MEM}", "64Gi")
	templated_size := shm_pod("w5", "64Gi", "{{ .Values.shm }}")
	malformed := shm_pod("w6", "64gb", "64Gi")
	launcher := object.union(shm_pod("l", "8Gi", "8Gi"), {"metadata": {"name": "l", "labels": {"training.kubeflow.org/job-role": "launcher"}}})
	count(pods.pod_shm_exceeds_memory_limit) == 0 with input as {"pods": [unbounded, disk, host, nolimit, templated_limit, templated_size, malformed, launcher]}
}

# The pod-level limit bounds every container; the lower of it and the
# container's own is the one that counts.
test_shm_exceeds_pod_level_limit if {
	c := {"name": "t", "resources": {"limits": {"nvidia.com/gpu": 8}}, "volumeMounts": shm_mount.volumeMounts}
	p := pod("w0", {"resources": {"limits": {"memory": "64Gi"}}, "containers": [c], "volumes": [shm_volume({"medium": "Memory", "sizeLimit": "64Gi"})]})
	[f] := [f | some f in pods.pod_shm_exceeds_memory_limit with input as {"pods": [p]}]
	contains(f.msg, "of t (64Gi)")
	f.fix.volume_size_limit.size == "32Gi"
	lower := pod("w1", {"resources": {"limits": {"memory": "32Gi"}}, "containers": [gpu_container(8, shm_mount)], "volumes": [shm_volume({"medium": "Memory", "sizeLimit": "48Gi"})]})
	[g] := [g | some g in pods.pod_shm_exceeds_memory_limit with input as {"pods": [lower]}]
	contains(g.msg, "of trainer (32Gi)")
	g.fix.volume_size_limit.size == "16Gi"

	# The two equal, written differently: one bound, the container's text.
	same := pod("w2", {"resources": {"limits": {"memory": "68719476736"}}, "containers": [gpu_container(8, object.union(shm_mount, {"resources": {"limits": {"memory": "64Gi"}}}))], "volumes": [shm_volume({"medium": "Memory", "sizeLimit": "64Gi"})]})
	[h] := [h | some h in pods.pod_shm_exceeds_memory_limit with input as {"pods": [same]}]
	contains(h.msg, "of trainer (64Gi)")
}

# Two containers mount the volume: the one whose limit it reaches is
# named, and the fix is half the lower limit, below both.
test_shm_exceeds_names_the_containers_it_reaches if {
	sidecar := object.union(gpu_container(0, shm_mount), {"name": "sidecar", "resources": {"limits": {"memory": "8Gi"}}})
	p := pod("w0", {"containers": [gpu_container(8, shm_mount), sidecar], "volumes": [shm_volume({"medium": "Memory", "sizeLimit": "16Gi"})]})
	[f] := [f | some f in pods.pod_shm_exceeds_memory_limit with input as {"pods": [p]}]
	contains(f.msg, "memory limit of sidecar (8Gi):")
	f.fix.volume_size_limit.size == "4Gi"

	# A writer whose limit a template fills in: reported for the other,
	# no fix (its limit may be below the new size).
	templated := object.union(gpu_container(8, shm_mount), {"resources": {"limits": {"memory": "$MEM"}}})
	q := pod("w1", {"containers": [templated, sidecar], "volumes": [shm_volume({"medium": "Memory", "sizeLimit": "16Gi"})]})
	[g] := [g | some g in pods.pod_shm_exceeds_memory_limit with input as {"pods": [q]}]
	not g.fix
}

test_half_size_units if {
	pods.half_size(137438953472) == "64Gi"
	pods.half_size(1073741824) == "512Mi"
	pods.half_size(3221225472) == "1536Mi"
	pods.half_size(2000000000) == "1G"
	pods.half_size(3) == "1"
	pods.half_size(1048577) == "512Ki"
	pods.half_size(1048579) == "524289"
	pods.half_size(1000000000000) == "500G"
}
