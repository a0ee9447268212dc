# systemd-logind settings that affect jobs.
package fleetaudit.rules.logind

# METADATA
# title: logind removes the job user's shared memory
# description: >-
#   The effective RemoveIPC of systemd-logind is yes, set explicitly or left
#   unset (upstream systemd and Ubuntu default to yes; RHEL 9 patches the
#   default to no, which the collector resolves from the OS release). logind
#   then deletes the user's System V IPC objects and POSIX shared memory,
#   NCCL's /dev/shm/nccl-* segments among them, when the user's last login
#   session ends, and running jobs fail.
# related_resources:
# - ref: https://github.com/systemd/systemd/issues/2039
#   description: RemoveIPC=yes removes shared memory of running services
# - ref: https://www.freedesktop.org/software/systemd/man/latest/logind.conf.html#RemoveIPC=
#   description: logind.conf RemoveIPC
# custom:
#   id: removeipc-enabled
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Set RemoveIPC=no in a logind.conf.d drop-in of the GPU fleet's own layer
#     (e.g. /etc/systemd/logind.conf.d/10-hpc.conf) and restart systemd-logind.
#   facts:
#   - logind.remove_ipc
#   - logind.remove_ipc_default
#   - os.id
#   - os.version_id
#   - logind.installed
#   - source.kind
removeipc_enabled contains f if {
	input.logind.remove_ipc == "yes"
	not logind_absent
	f := object.union(
		{"fix": {"kind": "logind", "set": {"RemoveIPC": "no"}}},
		why,
	)
}

why := {
	"msg": sprintf("RemoveIPC is unset and defaults to yes on %s %s: logind deletes the job user's /dev/shm/nccl-* segments when its last session ends", [input.os.id, input.os.version_id]),
	"evidence": ["logind.remove_ipc", "os.id", "os.version_id"],
} if {
	input.logind.remove_ipc_default == true
} else := {
	"msg": "RemoveIPC=yes: logind deletes the job user's /dev/shm/nccl-* segments when its last session ends",
	"evidence": ["logind.remove_ipc"],
}

# A host without systemd-logind (a minimal VM or container image) never
# applies RemoveIPC. A rendered config repo has no binaries to look for.
logind_absent if {
	input.logind.installed == false
	input.source.kind != "config-repo"
}
