# Job-starting systemd services: the limits their children inherit.
package fleetaudit.rules.services

import data.fleetaudit.rules.limits

kb(v) := -1 if v == "unlimited"

kb(v) := to_number(v) if v != "unlimited"

below(v) if {
	limits.memlock_min == "unlimited"
	kb(v) != -1
}

below(v) if {
	limits.memlock_min != "unlimited"
	kb(v) != -1
	kb(v) < to_number(limits.memlock_min)
}

# systemd's built-in default (no LimitMEMLOCK= nor DefaultLimitMEMLOCK=) is
# 8M from systemd 251, else the kernel's default (8 MiB since Linux 5.16,
# 64 KiB before): at most 8192 KiB, so it is known to be too low only
# against a minimum above that.
default_below if limits.memlock_min == "unlimited"

default_below if {
	limits.memlock_min != "unlimited"
	to_number(limits.memlock_min) > 8192
}

# What each unit passes on, from the best evidence there is: the running
# process's limits, else the configuration.
problem(name, u) := {"fact": sprintf("services.units.%s.running_memlock", [name]), "what": sprintf("its running process (PID %d) has memlock %s", [u.running_pid, limit_text(u.running_memlock)])} if {
	some v in [u.running_memlock.soft, u.running_memlock.hard]
	below(v)
} else := {"fact": sprintf("services.units.%s.memlock", [name]), "what": sprintf("it is configured with memlock %s", [limit_text(u.memlock)])} if {
	not u.running_memlock
	some v in [u.memlock.soft, u.memlock.hard]
	below(v)
} else := {"fact": sprintf("services.units.%s.memlock_default", [name]), "what": "it sets no LimitMEMLOCK=, so it gets systemd's default (8M since systemd 251, else the kernel's 8 MiB or 64 KiB)"} if {
	not u.running_memlock
	u.memlock_default == true
	default_below
}

limit_text(l) := sprintf("%s KiB", [l.soft]) if {
	l.soft == l.hard
	l.soft != "unlimited"
} else := l.soft if l.soft == l.hard

else := sprintf("soft %s, hard %s (KiB)", [l.soft, l.hard])

# METADATA
# title: Locked-memory limit of a job-starting service too low
# description: >-
#   slurmd, containerd, docker, kubelet or crio runs (or is configured to
#   run) with an RLIMIT_MEMLOCK below param memlock_min_kb. Jobs started by
#   a service inherit the service's limits, not pam_limits' (memlock-too-low
#   checks those), so RDMA registration fails with ENOMEM inside every job
#   it starts. Evidence, best first: the running process's
#   /proc/<pid>/limits; LimitMEMLOCK= from the unit file and its drop-ins
#   (the last assignment wins, as systemd reads them) or the manager's
#   DefaultLimitMEMLOCK=; with neither, systemd's built-in default (at most
#   8 MiB), reported only against a minimum above 8192 KiB. Where the
#   configuration is low, the fix is a drop-in of the unit's own
#   (etc/systemd/system/<unit>.d/zz-fleetaudit.conf) with
#   LimitMEMLOCK=infinity; a running process low under a configuration
#   that is not needs a restart, and gets no fix.
# related_resources:
# - ref: https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html#Process%20Properties
#   description: LimitMEMLOCK= and how units set resource limits
# - ref: https://www.freedesktop.org/software/systemd/man/latest/systemd-system.conf.html
#   description: DefaultLimitMEMLOCK=, 8M by default
# - ref: https://slurm.schedmd.com/faq.html#memlock
#   description: Slurm - daemons pass their memlock limit to jobs
# custom:
#   id: service-memlock-too-low
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Set LimitMEMLOCK=infinity in a drop-in of the service
#     (/etc/systemd/system/<unit>.d/) in the GPU fleet's own layer, then
#     daemon-reload and restart the service.
#   facts:
#   - services.units
service_memlock_too_low contains f if {
	some name, u in input.services.units
	not u.masked
	p := problem(name, u)
	f := object.union(
		{
			"msg": sprintf("%s starts jobs, and %s, below the fleet's minimum %v", [name, p.what, limits.memlock_min]),
			"evidence": [p.fact],
		},
		service_fix(name, u),
	)
}

# The configuration is what is low: the unit's LimitMEMLOCK= (or the
# manager's default), or no setting against a minimum above systemd's.
config_low(u) if {
	some v in [u.memlock.soft, u.memlock.hard]
	below(v)
}

config_low(u) if {
	not u.memlock
	u.memlock_default == true
	default_below
}

# A drop-in of the unit's own with LimitMEMLOCK=infinity, read after the
# unit file and its other drop-ins. Where only the running process is low
# (configured right, not restarted since) the remedy is a restart, which
# no configuration change is: no fix.
service_fix(name, u) := {"fix": {"kind": "service-limits", "unit": name, "set": {"LimitMEMLOCK": "infinity"}}} if {
	config_low(u)
} else := {}
