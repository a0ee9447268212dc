# pam_limits: what a job's processes may lock, open and grow.
package fleetaudit.rules.limits

import data.fleetaudit.lib.version

default memlock_min := "unlimited"

memlock_min := data.fleetaudit.params.memlock_min_kb

# Domains whose limits a job gets: everyone, and the job user when the
# profile names one and the snapshot computed its limits.
memlock_domains := {"*"} | {u |
	u := data.fleetaudit.params.job_user
	u != ""
	input.limits.effective[u]
}

# The kernel that applies: the running one, or on an offline image the one
# it boots.
kernel_release := input.kernel.release

kernel_release := input.kernel.boot_release if not input.kernel.release

# Without a memlock line the kernel default applies: 8 MiB since Linux 5.16
# (MLOCK_LIMIT), 64 KiB before or when the kernel is unknown.
kernel_default_kb := 8192 if not version.less(kernel_release, "5.16")

else := 64

memlock_kb(v) := -1 if v == "unlimited"

else := kernel_default_kb if v == ""

else := to_number(v)

below(v) if {
	memlock_min == "unlimited"
	memlock_kb(v) != -1
}

below(v) if {
	memlock_min != "unlimited"
	memlock_kb(v) != -1
	memlock_kb(v) < to_number(memlock_min)
}

limit_text("") := sprintf("unset (kernel default %d KiB)", [kernel_default_kb])

# The minimum as a limits.conf value: a fix's values are strings, and the
# profile may give the param as a number.
memlock_value := memlock_min if is_string(memlock_min)

else := format_int(memlock_min, 10)

limit_text(v) := v if v != ""

# METADATA
# title: Locked-memory limit too low for RDMA
# description: >-
#   The effective pam_limits memlock for the wildcard domain, or for the
#   fleet's job user (param job_user), is below param memlock_min_kb. RDMA
#   verbs pin every registered buffer against RLIMIT_MEMLOCK: ibv_reg_mr and
#   ibv_create_cq fail with ENOMEM and NCCL falls back or aborts. An unset
#   limit is the kernel default (8 MiB since Linux 5.16, 64 KiB before; on
#   an offline image, of the kernel it boots: the newest installed). The
#   default minimum is unlimited, from NCCL's own troubleshooting guide, which
#   gives "the solution is to remove the user limits on registering pinned
#   memory" with "* soft/hard memlock unlimited" (networking_troubleshooting.rst,
#   lines 238-244 at v2.30.7-1). The incident write-ups accept 8388608 KiB
#   (8 GiB) as an EFA field workaround; a fleet that chooses it sets
#   memlock_min_kb: 8388608. Systemd services take LimitMEMLOCK= instead
#   (service-memlock-too-low); this rule audits the login path jobs use.
# related_resources:
# - ref: https://github.com/NVIDIA/nccl/blob/v2.30.7-1/docs/userguide/source/troubleshooting/networking_troubleshooting.rst#L238-L244
#   description: NCCL - remove the memlock limit (unlimited), the source of the default
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/networking_troubleshooting.html
#   description: NCCL networking troubleshooting, InfiniBand pinned memory
# - ref: https://github.com/NVIDIA/nccl-tests/issues/206
#   description: ibv_create_cq ENOMEM from a low memlock limit
# - ref: https://man7.org/linux/man-pages/man5/limits.conf.5.html
#   description: limits.conf(5)
# custom:
#   id: memlock-too-low
#   severity: high
#   profiles: [gpu-training]
#   image: true
#   remediation: >-
#     Set "* - memlock unlimited" (or the job user's group) in a limits.d file of
#     the GPU fleet's own layer, then start new sessions.
#   facts:
#   - limits.effective
#   - kernel.release
#   - kernel.boot_release
memlock_too_low contains f if {
	some domain in memlock_domains
	some kind in ["soft", "hard"]
	value := object.get(input.limits.effective, [domain, "memlock", kind], "")
	value != "unlimited" # never below: skip converting it
	below(value)
	f := {
		"msg": sprintf("memlock %s limit for %s is %s, below the fleet's minimum %s", [kind, domain, limit_text(value), memlock_value]),
		"evidence": [sprintf("limits.effective.%s.memlock.%s", [domain, kind])],
		"fix": {"kind": "limits", "set": {"domain": domain, "type": kind, "item": "memlock", "value": memlock_value}},
	}
}

default nofile_min := 65536

nofile_min := data.fleetaudit.params.nofile_min

# METADATA
# title: Open-file limit too low
# description: >-
#   The effective hard nofile limit for the wildcard domain is below param
#   nofile_min (default 65536). NCCL opens sockets and file descriptors per
#   peer and per channel and fails init with "Too many open files" at scale;
#   busy web servers run out of connections the same way. An unset limit is
#   not reported: it is inherited from systemd, which raises the hard limit
#   itself.
# related_resources:
# - ref: https://github.com/NVIDIA/nccl/issues/550
#   description: NCCL init fails with too many open files
# - ref: https://man7.org/linux/man-pages/man5/limits.conf.5.html
#   description: limits.conf(5)
# custom:
#   id: nofile-too-low
#   severity: medium
#   profiles: [all]
#   remediation: >-
#     Raise "* hard nofile" (and soft) to at least the fleet minimum in a
#     limits.d file.
#   facts:
#   - limits.effective
nofile_too_low contains f if {
	v := input.limits.effective["*"].nofile.hard
	v != "unlimited"
	to_number(v) < nofile_min
	f := {
		"msg": sprintf("hard nofile limit for * is %s, below %d", [v, nofile_min]),
		"evidence": ["limits.effective.*.nofile.hard"],
		"fix": {"kind": "limits", "set": {"domain": "*", "type": "hard", "item": "nofile", "value": format_int(nofile_min, 10)}},
	}
}

default nccl_stack_safe := "2.30.4"

# The soft stack a fix sets: the kernel's default soft limit (_STK_LIM,
# 8 MiB), the size glibc then gives new threads and the one NCCL 2.30.4
# falls back to itself. The hard limit is left as it is.
stack_soft_kb := "8192"

nccl_stack_safe := data.fleetaudit.params.nccl_min_stack_safe

# METADATA
# title: Unlimited stack with an NCCL that overruns it
# description: >-
#   The soft stack limit is unlimited for a domain the snapshot computed (the
#   wildcard, the job user, --limits-domain) and an NCCL older than param
#   nccl_min_stack_safe (default 2.30.4) is installed. With an unlimited
#   RLIMIT_STACK glibc gives new threads its built-in default (2 MiB on x86-64)
#   instead of the 8 MiB soft limit, and NCCL's recursive topology search
#   overruns it on large systems. In NVIDIA/nccl#2186 the maintainers
#   reproduced the crash with 2.27.5 only after ulimit -s unlimited, and 2.30.4
#   instead logs "Stack size limit (unlimited) is unsafe; will use 8192KB";
#   releases in between were not tested there, so they count as affected.
# related_resources:
# - ref: https://github.com/NVIDIA/nccl/issues/2186
#   description: topology search overruns the thread stack
# custom:
#   id: stack-unlimited
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Set a finite stack limit (for example 8192 or 65536 KiB) for job users, or
#     upgrade NCCL to the fixed release.
#   facts:
#   - limits.effective
#   - libraries.nccl
stack_unlimited contains f if {
	some domain, items in input.limits.effective
	items.stack.soft == "unlimited"
	old := {l.version | some l in input.libraries.nccl; version.less(l.version, nccl_stack_safe)}
	count(old) > 0
	f := {
		"msg": sprintf("stack limit for %s is unlimited and NCCL %s is older than %s", [domain, concat(", ", sort(old)), nccl_stack_safe]),
		"evidence": [sprintf("limits.effective.%s.stack.soft", [domain]), "libraries.nccl"],
		"fix": {"kind": "limits", "set": {"domain": domain, "type": "soft", "item": "stack", "value": stack_soft_kb}},
	}
}
