# Network interfaces (/sys/class/net) against the NCCL settings that name them.
package fleetaudit.rules.net

import data.fleetaudit.rules.pods

# NCCL takes an interface when it is running (IFF_RUNNING: operstate up, or
# unknown for drivers that report no carrier state, loopback among them).
running(ifc) if ifc.operstate in {"up", "unknown"}

running_names := {name | some name, ifc in input.net.interfaces; running(ifc)}

# matches(value) is the running interfaces NCCL_SOCKET_IFNAME=value selects,
# as ncclOsFindInterfaces (src/os/linux.cc) and matchIfList
# (src/misc/utils.cc) read it: a leading "^" excludes, then a leading "="
# matches names exactly instead of by prefix; entries are comma-separated,
# each "prefix[:port]".
matches(value) := {name |
	some name in running_names
	selected(name, value)
}

selected(name, value) if {
	not startswith(value, "^")
	listed(name, value)
}

selected(name, value) if {
	startswith(value, "^")
	not listed(name, substring(value, 1, -1))
}

listed(name, list) if {
	startswith(list, "=")
	some entry in split(substring(list, 1, -1), ",")
	prefix := split(entry, ":")[0]
	prefix != ""
	name == prefix
}

listed(name, list) if {
	not startswith(list, "=")
	some entry in split(list, ",")
	prefix := split(entry, ":")[0]
	prefix != ""
	startswith(name, prefix)
}

# NCCL ignores a value of one character or less (strlen(env) > 1).
effective(value) if count(value) > 1

# METADATA
# title: NCCL_SOCKET_IFNAME matches no running interface
# description: >-
#   NCCL_SOCKET_IFNAME, in the host's NCCL configuration or a pod's env,
#   selects no interface that is running on the host (/sys/class/net
#   operstate up, or unknown as loopback reports it). NCCL reads the value as
#   ncclOsFindInterfaces does: comma-separated name prefixes, "=" for exact
#   names, a leading "^" to exclude, ":port" suffixes ignored here; a value of
#   one character is ignored by NCCL and here. With no match, NCCL's
#   bootstrap fails with "no socket interface found" or, on a host where only
#   an unintended interface matches, picks it. An interface also needs an IP
#   address, which /sys/class/net does not show: a match here is necessary,
#   not sufficient. Not evaluated where /sys/class/net was not read (a
#   rendered config repo).
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_SOCKET_IFNAME prefixes, = and ^
# - ref: https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/os/linux.cc#L379-L419
#   description: ncclOsFindInterfaces - running interfaces only, ^ and = handling
# - ref: https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/misc/utils.cc#L189-L245
#   description: parseStringList and matchIfList - prefix or exact match per entry
# custom:
#   id: nccl-socket-ifname-unmatched
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Set NCCL_SOCKET_IFNAME to the interface (or prefix) that carries the
#     fleet's bootstrap network on these hosts, in the fleet's own layer or
#     the pod spec; check the interface is up.
#   facts:
#   - net.present
#   - net.interfaces
#   - nccl_config.effective
#   - pods
nccl_socket_ifname_unmatched contains f if {
	input.net.present == true
	value := input.nccl_config.effective.NCCL_SOCKET_IFNAME
	effective(value)
	count(matches(value)) == 0
	f := {
		"msg": sprintf("NCCL_SOCKET_IFNAME=%s matches none of the running interfaces (%s)", [value, concat(", ", sort(running_names))]),
		"evidence": ["nccl_config.effective.NCCL_SOCKET_IFNAME", "net.interfaces"],
	}
}

nccl_socket_ifname_unmatched contains f if {
	input.net.present == true
	some i, p in input.pods
	not pods.launcher(p)
	some c in pods.containers(p)
	some e in object.get(c, "env", [])
	e.name == "NCCL_SOCKET_IFNAME"
	value := object.get(e, "value", "")
	effective(value)
	count(matches(value)) == 0
	# A pod on the host network sees the host's interfaces; any other pod
	# has its own network namespace, whose interfaces no snapshot holds.
	pods.spec(p).hostNetwork == true
	f := {
		"msg": sprintf("container %s of pod %s (host network) sets NCCL_SOCKET_IFNAME=%s, which matches none of the running interfaces (%s)", [c.name, pods.name(p), value, concat(", ", sort(running_names))]),
		"evidence": [pods.pod_path(i), "net.interfaces"],
	}
}
