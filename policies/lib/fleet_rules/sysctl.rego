# Running kernel tunables across the hosts of one fleet.
package fleetaudit.fleet_rules.sysctl

import data.fleetaudit.lib.skew

# Keys every host sets for itself, never drift.
per_host_keys := {"kernel.hostname", "kernel.random.boot_id", "kernel.ns_last_pid", "fs.dentry-state", "fs.inode-nr", "fs.file-nr"}

ignored := per_host_keys | {k | some k in data.fleetaudit.params.sysctl_skew_ignore}

default sysctl_baseline := {}

sysctl_baseline := data.fleetaudit.params.baseline.sysctl

# Running values are text; a profile may write a baseline value as a number.
baseline_text := {k: sysctl_text(v) | some k, v in sysctl_baseline}

# [group, its compared sysctls] for every group (object.remove runs as one
# builtin, not one Rego step per key).
cleaned := [[g.group, object.remove(g.sysctl.running, ignored)] | some g in input.groups]

# [map, groups, hosts]: the distinct sysctl maps of the fleet and the groups that
# run each (groups differ in other facts too), with how many hosts that is.
configs := [[m, groups, n] |
	some m in {c | some [_, c] in cleaned}
	groups := [g | some [g, c] in cleaned; c == m]
	n := sum([skew.hosts_in[g] | some g in groups])
]

keys := {key | some [m, _, _] in configs; some key, _ in m}

# distribution[key][value] = number of hosts running that value.
distribution := {key: {v: n |
	some v in {m[key] | some [m, _, _] in configs}
	n := sum([k | some [m, _, k] in configs; m[key] == v])
} |
	some key in keys
}

# Keys that can deviate: more than one value in the fleet, or a baseline.
compared := {key | some key, dist in distribution; count(dist) > 1} | {key | some key, _ in baseline_text; key in keys}

expected := {key: skew.expected_from(distribution[key], object.get(baseline_text, key, null)) |
	some key in compared
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
	some key, exp in expected
	some [m, groups, _] in configs
	v := m[key]
	deviates(v, exp)
	some group in groups
	f := object.union(skew.finding(group, v, exp, key, [sprintf("sysctl.running.%s", [key])]), skew_fix(key, exp))
}

# The fleet's value, declared or held by the majority, set in the fleet's
# sysctl.d layer. Without consensus there is no value to set.
skew_fix(key, exp) := {"fix": {"kind": "sysctl", "set": {key: exp.value}}} if exp.basis != "none"

else := {}

sysctl_text(x) := x if is_string(x)

else := sprintf("%v", [x])

deviates(_, exp) if exp.basis == "none"

deviates(v, exp) if v != exp.value
