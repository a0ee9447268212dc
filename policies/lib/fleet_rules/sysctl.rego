# Running kernel tunables across the hosts of one fleet.
package fleetaudit.fleet_rules.sysctl

import data.fleetaudit.lib.skew

# Keys every host sets for itself, never drift.
per_host_keys := {"kernel.hostname", "kernel.random.boot_id", "kernel.ns_last_pid", "fs.dentry-state", "fs.inode-nr", "fs.file-nr"}

ignored := per_host_keys | {k | some k in data.fleetaudit.params.sysctl_skew_ignore}

keys := {key |
	some h in input.hosts
	some key, _ in h.sysctl.running
	not key in ignored
}

# values[key][host] = that host's running value: one pass over the hosts per
# key, so a 10,000-host fleet stays linear.
values := {key: {h.host: v |
	some h in input.hosts
	v := h.sysctl.running[key]
} |
	some key in keys
}

default sysctl_baseline := {}

sysctl_baseline := data.fleetaudit.params.baseline.sysctl

expected := {key: skew.expected(hosts, object.get(sysctl_baseline, key, null)) |
	some key, hosts in values
}

# METADATA
# title: Running sysctl values differ across the fleet
# description: >-
#   A running kernel tunable differs from the fleet's declared baseline (param
#   baseline.sysctl, a map of key to value) or, without one, from the value at
#   least 60% of the fleet's hosts run; below 60% the lack of consensus is
#   itself the finding. Per-host keys (hostname, boot id, counters) and keys in
#   param sysctl_skew_ignore are not compared, nor hosts that do not report the
#   key.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/sysctl/index.html
#   description: /proc/sys
# custom:
#   id: sysctl-skew
#   severity: low
#   profiles: [gpu-training, web-serving]
#   remediation: >-
#     Bring the host's sysctl.d configuration to the fleet's and apply it, or
#     declare the intended value in the profile's baseline.sysctl.
#   facts:
#   - sysctl.running
sysctl_skew contains f if {
	some key, hosts in values
	some host, v in hosts
	f := skew.finding(host, v, expected[key], key, [sprintf("sysctl.running.%s", [key])])
}
