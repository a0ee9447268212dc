# Hosts and the fleets they belong to.
package fleetaudit.rules.inventory

# The collectors always write the nvidia section (present: false without a
# driver), so a snapshot without it was not collected in full: whether the
# host has GPUs is not known, and the rule is reported skipped, not run.

# METADATA
# title: Host matches no fleet profile
# description: >-
#   The host matched no fleet profile, so only the rules that apply to every
#   fleet audited it. Unaudited hosts are how hazards hide. High when the host
#   has GPUs (nvidia.present or nvidia.gpus): none of the GPU rules ran on it.
# related_resources:
# - ref: https://github.com/fleetaudit/fleetaudit#configuration
#   description: fleet profiles and how hosts match them
# custom:
#   id: unknown-fleet
#   severity: medium
#   profiles: [all]
#   image: true
#   remediation: >-
#     Name the host's fleet in the inventory, or extend a fleet profile's match
#     (inventory group, label selector, hostname glob or facts) to cover it.
#   facts:
#   - host
#   - labels
#   - nvidia.present
#   - nvidia.gpus
unknown_fleet contains f if {
	data.fleetaudit.fleet == ""
	f := object.union(
		{
			"msg": sprintf("host %s matches no fleet profile; only rules for all fleets audited it%s", [input.host, gpu_text]),
			"evidence": array.concat(["host", "labels"], gpu_evidence),
		},
		gpu_severity,
	)
}

has_gpus if input.nvidia.present == true

has_gpus if count(input.nvidia.gpus) > 0

# The GPU rules did not run on a GPU host: as bad as the worst hazard they
# would have found unreported.
gpu_severity := {"severity": "high"} if has_gpus
else := {}

gpu_text := sprintf(", though it has GPUs (%d found): no GPU rule ran", [count(gpus)]) if {
	has_gpus
	gpus := object.get(input, ["nvidia", "gpus"], [])
	is_array(gpus)
} else := ", though it has GPUs: no GPU rule ran" if has_gpus
else := ""

gpu_evidence := [p | some p in ["nvidia.present", "nvidia.gpus"]; gpu_fact(p)]

gpu_fact("nvidia.present") if input.nvidia.present == true

gpu_fact("nvidia.gpus") if count(input.nvidia.gpus) > 0
