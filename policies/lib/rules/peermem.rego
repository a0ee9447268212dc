# GPUDirect RDMA: the peer-memory modules and the DMA-BUF path.
package fleetaudit.rules.peermem

import data.fleetaudit.lib.version

loaded(m) if m in input.modules.loaded

configured(m) if input.modules.configured[m]

# Set to load at boot: listed in modules-load.d (or /etc/modules, or
# rdma-core's /etc/rdma/modules lists, loaded by systemd-modules-load once
# RDMA hardware appears) and not blocked by modprobe.d. systemd-modules-load probes with kmod's
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
#   image: true
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

# Driver releases by the state of the nvidia-peermem teardown race, as
# [from, before) version ranges ("before" null: open-ended), read from
# kernel-open/nvidia-peermem/nvidia-peermem.c at every release tag of
# NVIDIA/open-gpu-kernel-modules:
#   mitigated: nv_get_p2p_free_callback checks the context's magic
#     (NV_MEM_CONTEXT_MAGIC, NV_MEM_CONTEXT_CHECK_OK) before touching it,
#     the mitigation for NVIDIA bug 4272659: 535.129.03 (define line 83,
#     check line 124) to 535.288.01, the 535.43.24-535.43.28 series (line
#     90), every 550 and 555 tag (550.40.07 line 90). No 515, 520, 525, 530
#     or 545 tag and no other 535 tag has it.
#   fixed: persistent_api_support defaults to 1, so the "nv_mem" client is
#     the persistent one, with no invalidation callback: every tag from
#     560.28.03 (line 67) on.
# A release in neither is unmitigated. The persistent get_pages API
# (NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API, nv-p2p.h line 100; an extra
# "nv_mem_nc" client) is in 525.47.22-525.47.35, 525.105.17 and later 525s,
# every 535 from 535.43.02 and every later branch, never in 515, 520, 530 or
# other 525s; it leaves the default "nv_mem" client's callback unchanged, so
# it does not move the severity. A profile may replace the table with param
# peermem_race_drivers.
default peermem_race_drivers := {
	"mitigated": [
		{"from": "535.43.24", "before": "535.43.29"},
		{"from": "535.129.03", "before": "536"},
		{"from": "550", "before": "560"},
	],
	"fixed": [{"from": "560", "before": null}],
}

peermem_race_drivers := data.fleetaudit.params.peermem_race_drivers

in_ranges(v, ranges) if {
	some r in ranges
	not version.less(v, r.from)
	below(v, r.before)
}

below(_, null)

below(v, before) if version.less(v, before)

race_state(v) := "fixed" if in_ranges(v, object.get(peermem_race_drivers, "fixed", []))

else := "mitigated" if in_ranges(v, object.get(peermem_race_drivers, "mitigated", []))

else := "unmitigated"

race_severity := {"unmitigated": "high", "mitigated": "low"}

persistent_api_ranges := [
	{"from": "525.47.22", "before": "525.53"},
	{"from": "525.105.17", "before": "526"},
	{"from": "535.43.02", "before": null},
]

race_detail(v) := " (mitigated only; the fix is R560)" if {
	race_state(v) == "mitigated"
} else := " (unmitigated; only the opt-in nv_mem_nc client avoids it)" if {
	in_ranges(v, persistent_api_ranges)
} else := " (unmitigated, and no persistent get_pages API to avoid it)"

# METADATA
# title: nvidia-peermem with the teardown race
# description: >-
#   nvidia_peermem is loaded with a driver that has the race between P2P page
#   invalidation and put_pages on memory deregistration (NVIDIA bug 4272659;
#   Mellanox/nv_peer_memory#120): a process exit during RDMA traffic can crash
#   or hang the host. Per release, from kernel-open/nvidia-peermem/nvidia-peermem.c
#   at the release tags of open-gpu-kernel-modules (a table, param
#   peermem_race_drivers): high where the free callback has no context check
#   (every R515, R520, R525, R530 and R545 release, R535 before 535.129.03
#   except 535.43.24-535.43.28); low where it has the mitigation (535.129.03
#   and later R535, every R550 and R555 release), which NVIDIA's maintainer
#   names in Mellanox/nv_peer_memory#120; none from R560 (560.28.03), where
#   the default nv_mem client uses the persistent API and registers no
#   invalidation callback. The hazard catalog's R525 boundary, 525.105.17, is
#   the release that added the persistent get_pages API (nv-p2p.h), which
#   only adds a second, opt-in nv_mem_nc client: no R525 release has the
#   mitigation, so every R525 is high, as are R515 and R520 (never fixed). The
#   sources win over the catalog. An R560+ driver loaded with
#   persistent_api_support=0 is back on the legacy client; that module option
#   is not checked.
# related_resources:
# - ref: https://github.com/Mellanox/nv_peer_memory/issues/120
#   description: NVIDIA's maintainer - 535.129.03 mitigates bug 4272659, R560 fixes it
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/535.129.03/kernel-open/nvidia-peermem/nvidia-peermem.c#L83
#   description: the mitigation (NV_MEM_CONTEXT_MAGIC, checked at line 124); absent at 535.113.01 and in every 545 tag
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/560.28.03/kernel-open/nvidia-peermem/nvidia-peermem.c#L67
#   description: persistent_api_support defaults to the persistent client from 560.28.03
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/525.105.17/kernel-open/nvidia/nv-p2p.h#L100
#   description: NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API, added in 525.105.17 and 535.43.02 (absent in 530.41.03)
# - ref: https://docs.nvidia.com/datacenter/tesla/tesla-release-notes-535-129-03/index.html
#   description: 535.129.03 release notes
# custom:
#   id: peermem-teardown-race
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Upgrade the driver to R560 or later (the full fix), or at least to a
#     release with the mitigation (535.129.03+ on R535, any R550); or use
#     DMA-BUF instead of nvidia-peermem where the open kernel module and
#     kernel 5.12+ allow it.
#   facts:
#   - modules.loaded
#   - nvidia.driver_version
peermem_teardown_race contains f if {
	loaded("nvidia_peermem")
	v := input.nvidia.driver_version
	version.parse(v)
	sev := race_severity[race_state(v)]
	f := {
		"msg": sprintf("nvidia_peermem is loaded with driver %s, which has the peer-memory teardown race%s", [v, race_detail(v)]),
		"evidence": ["nvidia.driver_version", "modules.loaded"],
		"severity": sev,
	}
}

# Why NCCL cannot use DMA-BUF instead of a peer-memory module. Each needs
# the fact: a copy of unknown version, or a snapshot that predates a list,
# blocks nothing.
dmabuf_impossible := {why | some kind in ["flavor", "kernel", "cuda", "rdma-core", "nccl", "env"]; why := dmabuf_blocker(kind)}

dmabuf_blocker("flavor") := "the driver is the proprietary kernel module (DMA-BUF export needs the open module)" if {
	input.nvidia.flavor == "proprietary"
}

dmabuf_blocker("kernel") := sprintf("kernel %s is older than 5.12", [input.kernel.release]) if {
	version.less(input.kernel.release, "5.12")
}

# NCCL gets the DMA-BUF handle with cuMemGetHandleForAddressRange, a CUDA
# 11.7 driver API (cudawrap.h). A runtime known by its major alone ("11")
# does not say.
dmabuf_blocker("cuda") := sprintf("every CUDA runtime on the host is older than 11.7 (%s)", [concat(", ", sort(versions))]) if {
	versions := all_below("cuda", "11.7", 2)
	count(versions) > 0
}

# ibv_reg_dmabuf_mr is in libibverbs from rdma-core 34 (IBVERBS_1.12).
dmabuf_blocker("rdma-core") := sprintf("rdma-core %s is older than 34, which added ibv_reg_dmabuf_mr", [concat(", ", sort(versions))]) if {
	versions := all_below("verbs", "34", 1)
	count(versions) > 0
}

dmabuf_blocker("nccl") := sprintf("every NCCL on the host is older than 2.13, which added DMA-BUF (%s)", [concat(", ", sort(versions))]) if {
	versions := all_below("nccl", "2.13", 2)
	count(versions) > 0
}

dmabuf_blocker("env") := "NCCL_DMABUF_ENABLE=0 in the host's NCCL configuration" if {
	input.nccl_config.effective.NCCL_DMABUF_ENABLE == "0"
}

# all_below is the versions of libraries.<list>, when every copy has a
# version of at least parts numbers below min; empty otherwise.
all_below(list, min, parts) := {l.version | some l in libs} if {
	libs := object.get(input.libraries, list, [])
	is_array(libs)
	count(libs) > 0
	every l in libs {
		count(version.parse(l.version)) >= parts
		version.less(l.version, min)
	}
} else := set()

# DMA-BUF is known to be possible: every prerequisite read and met.
dmabuf_possible if {
	input.nvidia.flavor == "open"
	not version.less(input.kernel.release, "5.12")
	version.parse(input.kernel.release)
	count(dmabuf_impossible) == 0
}

# The facts behind each blocker, cited when it holds.
blocker_fact := {
	"flavor": "nvidia.flavor", "kernel": "kernel.release", "cuda": "libraries.cuda",
	"rdma-core": "libraries.verbs", "nccl": "libraries.nccl", "env": "nccl_config.effective.NCCL_DMABUF_ENABLE",
}

blocker_evidence := [fact | some kind in ["flavor", "kernel", "cuda", "rdma-core", "nccl", "env"]; dmabuf_blocker(kind); fact := blocker_fact[kind]]

dmabuf_evidence := array.concat(["rdma.devices", "modules.loaded"], blocker_evidence)

# METADATA
# title: No GPUDirect RDMA path
# description: >-
#   The host has RDMA devices, nvidia_peermem is not loaded, and DMA-BUF cannot
#   replace it. NCCL's DMA-BUF path needs the open NVIDIA kernel module, Linux
#   5.12 or later, CUDA 11.7 or later (cuMemGetHandleForAddressRange), rdma-core
#   34 or later (ibv_reg_dmabuf_mr), NCCL 2.13 or later, and
#   NCCL_DMABUF_ENABLE not set to 0. NCCL then silently stages GPU buffers
#   through host memory, at a fraction of the bandwidth. A library whose
#   version is unknown is not held against the host.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_DMABUF_ENABLE (since 2.13) and GPUDirect RDMA requirements
# - ref: https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/include/cudawrap.h#L113-L114
#   description: cuMemGetHandleForAddressRange, NCCL's DMA-BUF export, needs CUDA 11.7 (11070)
# - ref: https://github.com/linux-rdma/rdma-core/blob/master/debian/libibverbs1.symbols
#   description: ibv_reg_dmabuf_mr@IBVERBS_1.12 first in rdma-core 34
# - ref: https://docs.nvidia.com/cuda/gpudirect-rdma/index.html
#   description: GPUDirect RDMA
# custom:
#   id: gpudirect-path-missing
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Load nvidia_peermem at boot (modules-load.d in the GPU fleet's layer), or
#     meet every DMA-BUF prerequisite (open kernel module, Linux 5.12+, CUDA
#     11.7+, rdma-core 34+, NCCL 2.13+, NCCL_DMABUF_ENABLE unset or 1).
#   facts:
#   - rdma.devices
#   - modules.loaded
#   - nvidia.flavor
#   - kernel.release
#   - libraries.cuda
#   - libraries.verbs
#   - libraries.nccl
#   - nccl_config.effective
gpudirect_path_missing contains f if {
	count(input.rdma.devices) > 0
	input.nvidia.present == true
	not loaded("nvidia_peermem")
	not loaded("nv_peer_mem")
	count(dmabuf_impossible) > 0
	f := object.union(
		{
			"msg": sprintf("RDMA devices are present but neither nvidia_peermem is loaded nor DMA-BUF possible: %s", [concat("; ", sort(dmabuf_impossible))]),
			"evidence": dmabuf_evidence,
		},
		load_fix,
	)
}

# No fix: modules-load.d already lists the module and nothing blocks it,
# so a modules fix would write what is there. What failed is the load at
# boot (ordering, a module built for another kernel or another ib_core),
# which the snapshot does not show; the finding is live-only, so the gate
# could not prove a change either.

# METADATA
# title: nvidia-peermem configured to load but not loaded
# description: >-
#   modules-load.d (or /etc/modules, or rdma-core's /etc/rdma/modules lists)
#   lists nvidia_peermem and modprobe.d does not block it, yet the running
#   host has not loaded it: typically the module was loaded before the
#   nvidia driver or the RDMA core it depends on and failed, and nothing retried. GPUDirect RDMA is then silently off. High
#   when DMA-BUF cannot replace it (the prerequisites of
#   gpudirect-path-missing), else medium. Live hosts only: a rendered
#   configuration has no running modules.
# related_resources:
# - ref: https://docs.nvidia.com/cuda/gpudirect-rdma/index.html
#   description: nvidia-peermem
# - ref: https://www.freedesktop.org/software/systemd/man/latest/systemd-modules-load.service.html
#   description: modules-load.d, loaded early in boot
# custom:
#   id: peermem-configured-not-loaded
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Load it now (modprobe nvidia-peermem) and find why boot did not: order
#     it after the driver and the RDMA stack (a systemd unit with
#     After=nvidia-persistenced.service openibd.service, or a softdep in
#     modprobe.d), then reboot to prove it.
#   facts:
#   - modules.configured
#   - modules.loaded
#   - modules.blacklisted
#   - modules.install
#   - nvidia.present
#   - nvidia.flavor
#   - kernel.release
#   - libraries.cuda
#   - libraries.verbs
#   - libraries.nccl
#   - nccl_config.effective
#   - source.kind
peermem_configured_not_loaded contains f if {
	input.source.kind != "config-repo"
	input.nvidia.present == true
	boot_loads("nvidia_peermem")
	not loaded("nvidia_peermem")
	f := {
		"msg": sprintf("nvidia_peermem is configured to load at boot but is not loaded%s", [configured_not_loaded_why]),
		"evidence": array.concat(["modules.configured.nvidia_peermem", "modules.loaded"], blocker_evidence),
		"severity": configured_not_loaded_severity,
	}
}

configured_not_loaded_severity := "high" if count(dmabuf_impossible) > 0

else := "medium"

configured_not_loaded_why := sprintf(", and DMA-BUF cannot replace it (%s)", [concat("; ", sort(dmabuf_impossible))]) if {
	count(dmabuf_impossible) > 0
} else := ": GPUDirect RDMA relies on DMA-BUF alone"

# METADATA
# title: GPUDirect RDMA by DMA-BUF only, no nvidia-peermem
# description: >-
#   RDMA devices are present, every DMA-BUF prerequisite is known and met
#   (open kernel module, Linux 5.12+, and no CUDA, rdma-core, NCCL or
#   NCCL_DMABUF_ENABLE blocker), and neither nvidia_peermem nor nv_peer_mem
#   is loaded. NCCL uses DMA-BUF and is fine; software that registers GPU
#   memory through the peer-memory client (MPI and UCX builds without
#   DMA-BUF, GPUDirect Storage, older NCCL in containers) silently loses
#   GPUDirect on such hosts.
# related_resources:
# - ref: https://docs.nvidia.com/cuda/gpudirect-rdma/index.html
#   description: nvidia-peermem and DMA-BUF
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL_DMABUF_ENABLE
# custom:
#   id: peermem-absent-dmabuf-only
#   severity: low
#   profiles: [gpu-training]
#   remediation: >-
#     Load nvidia_peermem at boot (modules-load.d in the GPU fleet's layer) if
#     any workload registers GPU memory without DMA-BUF; otherwise accept the
#     finding with a waiver.
#   facts:
#   - rdma.devices
#   - modules.loaded
#   - modules.configured
#   - nvidia.present
#   - nvidia.flavor
#   - kernel.release
#   - libraries.cuda
#   - libraries.verbs
#   - libraries.nccl
#   - nccl_config.effective
peermem_absent_dmabuf_only contains f if {
	count(input.rdma.devices) > 0
	input.nvidia.present == true
	not loaded("nvidia_peermem")
	not loaded("nv_peer_mem")
	not boot_loads("nvidia_peermem")
	dmabuf_possible
	f := {
		"msg": "RDMA devices are present and GPUDirect RDMA works only through DMA-BUF: nvidia_peermem is not loaded, so software that needs the peer-memory client falls back to host staging",
		"evidence": ["rdma.devices", "modules.loaded", "nvidia.flavor", "kernel.release"],
		"fix": {"kind": "modules", "load": ["nvidia_peermem"]},
	}
}

# Configured to load and still not loaded is a module that fails to load:
# listing it again fixes nothing.
load_fix := {} if configured("nvidia_peermem")

else := {"fix": {"kind": "modules", "load": ["nvidia_peermem"]}}
