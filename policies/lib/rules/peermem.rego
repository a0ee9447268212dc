# GPUDirect RDMA: the peer-memory modules and the DMA-BUF path.
package fleetaudit.rules.peermem

import data.fleetaudit.lib.version

loaded(m) if m in input.modules.loaded

configured(m) if input.modules.configured[m]

# Set to load at boot: listed in modules-load.d (or /etc/modules) and not
# blocked by modprobe.d. systemd-modules-load probes with kmod's
# KMOD_PROBE_APPLY_BLACKLIST, so a "blacklist" line stops it; an install
# command that is true or false runs instead of loading the module.
boot_loads(m) if {
	configured(m)
	not blocked(m)
}

blocked(m) if input.modules.blacklisted[m]

blocked(m) if noop_command(input.modules.install[m])

# kmod runs the first install line whose pattern matches, in file order,
# which the snapshot does not keep: a line for the exact name is taken to
# come first, and otherwise any matching pattern that loads nothing blocks.
blocked(m) if {
	not input.modules.install[m]
	some pattern, cmd in input.modules.install
	glob.match(pattern, [], m)
	noop_command(cmd)
}

# kmod hands the command to the shell: these load nothing.
noop_command(cmd) if regex.match(`^((/usr)?/s?bin/)?(true|false)$`, trim_space(cmd))

present(m) if loaded(m)

present(m) if boot_loads(m)

where(m) := concat(" and ", [w | some w in ["loaded", "configured to load"]; state(w, m)])

state("loaded", m) if loaded(m)

state("configured to load", m) if boot_loads(m)

module_evidence(m) := [p | some p in [sprintf("modules.configured.%s", [m])]; boot_loads(m)]

# METADATA
# title: Both GPUDirect peer-memory modules
# description: >-
#   nv_peer_mem (Mellanox's out-of-tree module) and nvidia_peermem (shipped
#   with the NVIDIA driver since R470) are both loaded or configured to load.
#   They register the same peer-memory client; the driver README requires
#   nv_peer_mem to be unloaded and disabled before nvidia-peermem is used.
# related_resources:
# - ref: https://docs.nvidia.com/cuda/gpudirect-rdma/index.html
#   description: GPUDirect RDMA and nvidia-peermem
# - ref: https://github.com/Mellanox/nv_peer_memory
#   description: nv_peer_mem, superseded by nvidia-peermem
# - ref: https://github.com/systemd/systemd/blob/main/src/modules-load/modules-load.c
#   description: >-
#     systemd-modules-load loads each listed module through
#     module_load_and_warn, which probes with KMOD_PROBE_APPLY_BLACKLIST: a
#     blacklisted module listed in modules-load.d is skipped
# - ref: https://github.com/kmod-project/kmod/blob/master/libkmod/libkmod-module.c
#   description: >-
#     kmod_module_probe_insert_module returns early for a blacklisted module
#     under that flag, and otherwise runs an install command instead of loading
# - ref: https://man7.org/linux/man-pages/man5/modprobe.d.5.html
#   description: >-
#     blacklist ignores a module's aliases only; "modprobe name" (without -b)
#     still loads it, which install X /bin/false prevents
# custom:
#   id: peermem-dual-modules
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     In the GPU fleet's own layer, block nv_peer_mem in modprobe.d
#     ("blacklist nv_peer_mem" and "install nv_peer_mem /bin/false", so no
#     modprobe by name loads it either), keep nvidia_peermem in
#     modules-load.d, remove the nv_peer_mem package, and unload it (rmmod)
#     or reboot where it is loaded now.
#   facts:
#   - modules.loaded
#   - modules.configured
#   - modules.blacklisted
#   - modules.install
peermem_dual_modules contains f if {
	present("nv_peer_mem")
	present("nvidia_peermem")
	f := {
		"msg": sprintf("nv_peer_mem (%s) and nvidia_peermem (%s) are both present; only nvidia_peermem may be used", [where("nv_peer_mem"), where("nvidia_peermem")]),
		"evidence": array.concat(["modules.loaded"], array.concat(module_evidence("nv_peer_mem"), module_evidence("nvidia_peermem"))),
		"fix": dual_fix,
	}
}

# Keep nvidia_peermem loading at boot when only a running module had it.
dual_fix := {"kind": "modules", "blacklist": ["nv_peer_mem"]} if configured("nvidia_peermem")

else := {"kind": "modules", "load": ["nvidia_peermem"], "blacklist": ["nv_peer_mem"]}

# Releases with the nvidia-peermem invalidation/teardown race fixed, per
# branch (NVIDIA bug 4272659, as the hazard catalog records it).
race_fixed := {"525": "525.105.17", "530": "535.129.03", "535": "535.129.03"}

race_severity(v) := "high" if {
	fixed := race_fixed[format_int(version.major(v), 10)]
	version.less(v, fixed)
} else := "low" if {
	version.major(v) < 560
	not race_fixed[format_int(version.major(v), 10)]
}

# METADATA
# title: nvidia-peermem with the teardown race
# description: >-
#   nvidia_peermem is loaded with a driver that has the race between P2P page
#   invalidation and put_pages on memory deregistration (NVIDIA bug 4272659;
#   Mellanox/nv_peer_memory#120): a process exit during RDMA traffic can crash
#   or hang the host. High on R525 before 525.105.17 and R530-R535 before
#   535.129.03; low on other branches before R560, where the fix's status is
#   not documented. NVIDIA's maintainer names 535.129.03 as the mitigation
#   and R560 (560.35.03) as the full fix in Mellanox/nv_peer_memory#120; the
#   R525 boundary (525.105.17) is the hazard catalog's and no source found
#   confirms it (that release predates the bug number), so treat a pass on
#   R525 with suspicion.
# related_resources:
# - ref: https://github.com/Mellanox/nv_peer_memory/issues/120
#   description: teardown race between invalidation and put_pages
# - ref: https://docs.nvidia.com/datacenter/tesla/index.html
#   description: NVIDIA data center driver release notes
# custom:
#   id: peermem-teardown-race
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Upgrade the driver to a release with the fix (525.105.17+, 535.129.03+,
#     or R560 and later), or use DMA-BUF instead of nvidia-peermem where the
#     open kernel module and kernel 5.12+ allow it.
#   facts:
#   - modules.loaded
#   - nvidia.driver_version
peermem_teardown_race contains f if {
	loaded("nvidia_peermem")
	v := input.nvidia.driver_version
	sev := race_severity(v)
	f := {
		"msg": sprintf("nvidia_peermem is loaded with driver %s, which has the peer-memory teardown race", [v]),
		"evidence": ["nvidia.driver_version", "modules.loaded"],
		"severity": sev,
	}
}

# Why NCCL cannot use DMA-BUF instead of a peer-memory module.
dmabuf_impossible := {why | some kind in ["flavor", "kernel"]; why := dmabuf_blocker(kind)}

dmabuf_blocker("flavor") := "the driver is the proprietary kernel module (DMA-BUF export needs the open module)" if {
	input.nvidia.flavor == "proprietary"
}

dmabuf_blocker("kernel") := sprintf("kernel %s is older than 5.12", [input.kernel.release]) if {
	version.less(input.kernel.release, "5.12")
}

# METADATA
# title: No GPUDirect RDMA path
# description: >-
#   The host has RDMA devices, nvidia_peermem is not loaded, and DMA-BUF cannot
#   replace it: NCCL's DMA-BUF path needs the open NVIDIA kernel module and
#   Linux 5.12 or later. NCCL then silently stages GPU buffers through host
#   memory, at a fraction of the bandwidth.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_DMABUF_ENABLE and GPUDirect RDMA requirements
# - ref: https://docs.nvidia.com/cuda/gpudirect-rdma/index.html
#   description: GPUDirect RDMA
# custom:
#   id: gpudirect-path-missing
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Load nvidia_peermem at boot (modules-load.d in the GPU fleet's layer), or
#     move to the open kernel module on Linux 5.12+ so NCCL can use DMA-BUF.
#   facts:
#   - rdma.devices
#   - modules.loaded
#   - nvidia.flavor
#   - kernel.release
gpudirect_path_missing contains f if {
	count(input.rdma.devices) > 0
	input.nvidia.present == true
	not loaded("nvidia_peermem")
	not loaded("nv_peer_mem")
	count(dmabuf_impossible) > 0
	f := object.union(
		{
			"msg": sprintf("RDMA devices are present but neither nvidia_peermem is loaded nor DMA-BUF possible (%s)", [concat("; ", sort(dmabuf_impossible))]),
			"evidence": ["rdma.devices", "modules.loaded", "nvidia.flavor", "kernel.release"],
		},
		load_fix,
	)
}

# Configured to load and still not loaded is a module that fails to load:
# listing it again fixes nothing.
load_fix := {} if configured("nvidia_peermem")

else := {"fix": {"kind": "modules", "load": ["nvidia_peermem"]}}
