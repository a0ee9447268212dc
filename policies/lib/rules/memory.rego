# Memory management settings.
package fleetaudit.rules.memory

# METADATA
# title: Transparent hugepages always on a web server
# description: >-
#   /sys/kernel/mm/transparent_hugepage/enabled is "always": every anonymous
#   mapping may be backed by 2 MiB pages, so fork() and copy-on-write copy and
#   compact huge pages, and latency-sensitive caches and databases (Redis,
#   MongoDB, PostgreSQL) see stalls and memory bloat. "madvise" leaves the
#   choice to the applications that ask.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/mm/transhuge.html
#   description: transparent hugepage support
# custom:
#   id: thp-always
#   severity: medium
#   profiles: [web-serving]
#   remediation: >-
#     Set transparent_hugepage=madvise on the web fleet's kernel command line
#     (or write madvise to the sysfs file at boot).
#   facts:
#   - memory.transparent_hugepages
thp_always contains f if {
	input.memory.transparent_hugepages == "always"
	f := {
		"msg": "transparent hugepages are \"always\": fork and copy-on-write latency spikes in caches and databases",
		"evidence": ["memory.transparent_hugepages"],
		"fix": {"kind": "boot-param", "set": {"transparent_hugepage": "madvise"}},
	}
}
