# The collection itself: what could not be read is a blind spot, reported.
package fleetaudit.rules.collection

# METADATA
# title: A source could not be collected
# description: >-
#   A collector could not read or parse one of its sources, so the facts it
#   would have produced are missing and the rules that need them cannot see
#   the host. A blind spot is a finding, never a silence.
# related_resources:
# - ref: https://github.com/fleetaudit/fleetaudit#collecting-a-snapshot
#   description: what each collector reads
# custom:
#   id: collection-error
#   severity: medium
#   profiles: [all]
#   remediation: >-
#     Fix the file named in the finding (syntax, permissions) or run the
#     collection with the privileges it needs, then collect again.
#   facts:
#   - errors
collection_error contains f if {
	some i, e in input.errors
	f := {
		"msg": sprintf("%s collector could not read %s: %s", [e.collector, e.path, e.reason]),
		"evidence": [sprintf("errors.%d", [i])],
	}
}
