# The node types the workers of one job run on (same package as jobs.rego).
package fleetaudit.fleet_rules.jobs

import data.fleetaudit.lib.skew

group_docs := {g.group: g | some g in input.groups}

# A host's node type: its instance type label, and its GPU models. Unknown
# (neither) does not vote.
node_type(group) := concat(", ", parts) if {
	h := group_docs[group]
	itype := [sprintf("instance type %s", [t]) | t := instance_type(h)]
	models := sort({g.model | some g in object.get(h, ["nvidia", "gpus"], []); g.model != ""})
	gpus := [sprintf("GPU %s", [concat("+", models)]) | count(models) > 0]
	parts := array.concat(itype, gpus)
	count(parts) > 0
}

# The instance type label, else on EC2 the DMI product name (Nitro firmware
# sets it to the instance type), as efa-device-count-mismatch reads it.
instance_type(h) := h.labels["node.kubernetes.io/instance-type"]

instance_type(h) := h.dmi.product_name if {
	not h.labels["node.kubernetes.io/instance-type"]
	h.dmi.sys_vendor == "Amazon EC2"
}

node_type_values := {job: {w[1]: node_type(w[2]) | some w in workers; w[0] == job; node_type(w[2])} | some job in jobs}

# METADATA
# title: Workers of one job on different node types
# description: >-
#   The worker pods of one job run on nodes of different instance types (the
#   node.kubernetes.io/instance-type label, else on EC2 the DMI product
#   name) or GPU models (from the host's
#   GPUs). NCCL ranks on slower GPUs, fewer NICs or another interconnect pace
#   every collective of the whole job, and ranks that see different
#   topologies can pick different algorithms. Compared as in job-image-skew
#   (60% of the workers make the majority); launchers are not compared.
# related_resources:
# - ref: https://kubernetes.io/docs/reference/labels-annotations-taints/#nodekubernetesioinstance-type
#   description: node.kubernetes.io/instance-type
# - ref: https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
#   description: nodeSelector and node affinity to keep a job on one node type
# custom:
#   id: job-node-type-skew
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Pin the job's workers to one node type with a nodeSelector or node
#     affinity on node.kubernetes.io/instance-type (or the GPU product label
#     of NVIDIA's GPU feature discovery), then restart it.
#   facts:
#   - pods
#   - labels
#   - nvidia.gpus
#   - dmi
job_node_type_skew contains f if {
	some job, pods in node_type_values
	count(pods) > 1
	exp := skew.from_distribution(skew.votes(pods), null)
	some pod, v in pods
	f := skew.finding(group_of[pod], v, exp, sprintf("node type of job %s", [job]), ["pods", "nvidia.gpus"])
}
