# Kernel tunables: running values (/proc/sys) and configured ones (sysctl.d).
package fleetaudit.rules.sysctl

import data.fleetaudit.lib.version

default max_map_count_min := 262144

max_map_count_min := data.fleetaudit.params.max_map_count_min

default somaxconn_min := 4096

somaxconn_min := data.fleetaudit.params.somaxconn_min

# Rules name the running keys they judge in their refs, so each reads that
# key only: hosts whose other sysctls differ share its result.

# METADATA
# title: Automatic NUMA balancing on a training host
# description: >-
#   kernel.numa_balancing is 1: the kernel unmaps pages periodically to sample
#   access patterns and migrates them between nodes. Training jobs pin their
#   memory and threads already; the hinting faults cost time and cannot move
#   pinned RDMA buffers anyway.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/sysctl/kernel.html#numa-balancing
#   description: kernel.numa_balancing
# custom:
#   id: numa-balancing-enabled
#   severity: low
#   profiles: [gpu-training]
#   remediation: >-
#     Set kernel.numa_balancing = 0 in a sysctl.d file of the GPU fleet's layer
#     (or numa_balancing=disable on the kernel command line).
#   facts:
#   - sysctl.running.kernel.numa_balancing
numa_balancing_enabled contains f if {
	input.sysctl.running["kernel.numa_balancing"] == "1"
	f := {
		"msg": "kernel.numa_balancing is 1: NUMA hinting faults on pinned training jobs",
		"evidence": ["sysctl.running.kernel.numa_balancing"],
		"fix": {"kind": "sysctl", "set": {"kernel.numa_balancing": "0"}},
	}
}

# METADATA
# title: vm.max_map_count below the fleet minimum
# description: >-
#   vm.max_map_count is below param max_map_count_min (default 262144). Large
#   jobs (many CUDA contexts, memory-mapped datasets) and JVM or search
#   services exhaust the map count and fail mmap with ENOMEM.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/sysctl/vm.html#max-map-count
#   description: vm.max_map_count
# custom:
#   id: max-map-count-low
#   severity: low
#   profiles: [all]
#   remediation: >-
#     Set vm.max_map_count to at least the fleet minimum in a sysctl.d file.
#   facts:
#   - sysctl.running.vm.max_map_count
max_map_count_low contains f if {
	v := to_number(input.sysctl.running["vm.max_map_count"])
	v < max_map_count_min
	f := {
		"msg": sprintf("vm.max_map_count is %d, below %d", [v, max_map_count_min]),
		"evidence": ["sysctl.running.vm.max_map_count"],
		"fix": {"kind": "sysctl", "set": {"vm.max_map_count": format_int(max_map_count_min, 10)}},
	}
}

# METADATA
# title: Listen backlog capped low on a web server
# description: >-
#   net.core.somaxconn is explicitly configured below param somaxconn_min
#   (default 4096). The kernel caps every listen() backlog at this value, so
#   bursts overflow the accept queue and connections are dropped or reset.
#   Only an explicit setting is reported: since Linux 5.4 the default is 4096.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/sysctl/net.html#somaxconn
#   description: net.core.somaxconn
# custom:
#   id: somaxconn-low
#   severity: medium
#   profiles: [web-serving]
#   remediation: >-
#     Raise net.core.somaxconn to at least the fleet minimum where it is set.
#   facts:
#   - sysctl.configured.net.core.somaxconn
somaxconn_low contains f if {
	v := to_number(input.sysctl.configured["net.core.somaxconn"])
	v < somaxconn_min
	f := {
		"msg": sprintf("net.core.somaxconn is configured to %d, below %d", [v, somaxconn_min]),
		"evidence": ["sysctl.configured.net.core.somaxconn"],
		"fix": {"kind": "sysctl", "set": {"net.core.somaxconn": format_int(somaxconn_min, 10)}},
	}
}

# METADATA
# title: tcp_tw_recycle configured
# description: >-
#   net.ipv4.tcp_tw_recycle is configured. On kernels before 4.12 it drops
#   connections from clients behind NAT whose timestamps are not monotonic
#   (high). Linux 4.12 removed the knob: the line is a stale template, ignored
#   at boot (low).
# related_resources:
# - ref: https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id=4396e46187ca5070219b81773c4e65088dac50cc
#   description: tcp - remove tcp_tw_recycle (Linux 4.12)
# custom:
#   id: tcp-tw-recycle
#   severity: high
#   profiles: [web-serving]
#   image: true
#   remediation: >-
#     Delete the net.ipv4.tcp_tw_recycle line from the fleet's sysctl files.
#   facts:
#   - sysctl.configured.net.ipv4.tcp_tw_recycle
#   - kernel.release
#   - kernel.boot_release
tcp_tw_recycle contains f if {
	v := input.sysctl.configured["net.ipv4.tcp_tw_recycle"]
	v != "0"
	stale := knob_removed
	f := object.union(
		{
			"msg": tw_message(v, stale),
			"evidence": ["sysctl.configured.net.ipv4.tcp_tw_recycle", kernel_fact],
			"severity": tw_severity(stale),
		},
		tw_fix(stale),
	)
}

# Where the knob exists, 0 in the fleet's drop-in overrides the line. Where
# Linux removed it, the fix is deleting the stale line, which a drop-in
# cannot do (and a new line would be ignored at boot too): no fix.
tw_fix(false) := {"fix": {"kind": "sysctl", "set": {"net.ipv4.tcp_tw_recycle": "0"}}}

tw_fix(true) := {}

# The kernel that applies: the running one, or on an offline image the one
# it boots.
kernel_release := input.kernel.release

kernel_release := input.kernel.boot_release if not input.kernel.release

kernel_fact := "kernel.boot_release" if {
	not input.kernel.release
	input.kernel.boot_release
}

else := "kernel.release"

# Linux 4.12 removed the knob; an unknown kernel counts as a newer one.
knob_removed := false if version.less(kernel_release, "4.12")

else := true

tw_message(v, true) := sprintf("net.ipv4.tcp_tw_recycle = %s is configured but the knob was removed in Linux 4.12: a stale line", [v])

tw_message(v, false) := sprintf("net.ipv4.tcp_tw_recycle = %s drops clients behind NAT on this kernel", [v])

tw_severity(true) := "low"

tw_severity(false) := "high"

# Sysctl values the kernel prints with tabs or several spaces compare equal
# to the same fields written with single spaces.
normalized(v) := trim(regex.replace(v, `[ \t]+`, " "), " ")

# METADATA
# title: Configured sysctl not applied
# description: >-
#   A value set in sysctl.conf or sysctl.d differs from the running value: the
#   file was changed without running sysctl --system, or something changed the
#   value at run time. Declared and actual state drifted. Glob keys and keys
#   the kernel does not have (sysctl-invalid) are not compared. Not evaluated
#   for rendered config repositories.
# related_resources:
# - ref: https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html
#   description: sysctl.d
# custom:
#   id: sysctl-not-applied
#   severity: medium
#   profiles: [all]
#   remediation: >-
#     Apply the configuration (sysctl --system, or a reboot), or fix the file if
#     the running value is the intended one.
#   facts:
#   - sysctl.configured
#   - sysctl.running
#   - source.kind
sysctl_not_applied contains f if {
	input.source.kind != "config-repo"
	some key, want in input.sysctl.configured
	have := input.sysctl.running[key]
	want != have # most values match as written: skip normalizing them
	replace(have, "\t", " ") != want # as most others do once the kernel's tabs are spaces
	normalized(want) != normalized(have)
	f := {
		"msg": sprintf("%s is configured as %q but runs as %q", [key, want, have]),
		"evidence": [sprintf("sysctl.configured.%s", [key]), sprintf("sysctl.running.%s", [key])],
	}
}

# METADATA
# title: Configured sysctl the kernel ignores
# description: >-
#   A key configured in sysctl.conf or sysctl.d does not exist under /proc/sys
#   on this host (a removed knob, a module not loaded, a typo), or its value is
#   not one the kernel offers (tcp_congestion_control outside
#   tcp_available_congestion_control). systemd-sysctl logs and skips it at
#   boot, so the setting silently does not apply. Keys written with a leading
#   "-" are meant to be optional and are still listed, since the collector
#   does not keep that mark.
# related_resources:
# - ref: https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html
#   description: sysctl.d
# custom:
#   id: sysctl-invalid
#   severity: medium
#   profiles: [all]
#   remediation: >-
#     Remove or correct the line, or load the module that provides the key
#     before systemd-sysctl runs.
#   facts:
#   - sysctl.missing
#   - sysctl.configured
#   - sysctl.running
sysctl_invalid contains f if {
	some key in input.sysctl.missing
	f := {
		"msg": sprintf("%s is configured but does not exist on this kernel; it is ignored at boot", [key]),
		"evidence": [sprintf("sysctl.configured.%s", [key]), "sysctl.missing"],
	}
}

# A value that must be one the kernel offers in a companion list. The keys
# are written out so the rule reads those two only: hosts that agree on them
# share one result (a table of keys would read both maps whole).
sysctl_invalid contains f if {
	want := input.sysctl.configured["net.ipv4.tcp_congestion_control"]
	available := split(normalized(input.sysctl.running["net.ipv4.tcp_available_congestion_control"]), " ")
	not want in available
	f := {
		"msg": sprintf("net.ipv4.tcp_congestion_control = %s is not among net.ipv4.tcp_available_congestion_control (%s)", [want, concat(" ", available)]),
		"evidence": ["sysctl.configured.net.ipv4.tcp_congestion_control", "sysctl.running.net.ipv4.tcp_available_congestion_control"],
	}
}
