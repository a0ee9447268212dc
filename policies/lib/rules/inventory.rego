# Hosts and the fleets they belong to.
package fleetaudit.rules.inventory

# METADATA
# title: Host matches no fleet profile
# description: >-
#   The host matched no fleet profile, so only the rules that apply to every
#   fleet audited it. Unaudited hosts are how hazards hide.
# related_resources:
# - ref: https://github.com/fleetaudit/fleetaudit#configuration
#   description: fleet profiles and how hosts match them
# custom:
#   id: unknown-fleet
#   severity: medium
#   profiles: [all]
#   remediation: >-
#     Name the host's fleet in the inventory, or extend a fleet profile's match
#     (inventory group, label selector or hostname glob) to cover it.
#   facts:
#   - host
#   - labels
unknown_fleet contains f if {
	data.fleetaudit.fleet == ""
	f := {
		"msg": sprintf("host %s matches no fleet profile; only rules for all fleets audited it", [input.host]),
		"evidence": ["host", "labels"],
	}
}
