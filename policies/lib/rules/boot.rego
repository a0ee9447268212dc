# Kernel boot command line: running (/proc/cmdline) and configured (the
# default boot entry, the GRUB defaults or /etc/kernel/cmdline: the collector
# fills boot.configured from whichever the boot loader reads).
package fleetaudit.rules.boot

import data.fleetaudit.lib.version

# Boot params that reserve a CMA area when non-zero.
cma_params := ["hugetlb_cma", "cma"]

# Driver releases whose os_lock_user_pages pins with FOLL_LONGTERM on x86,
# as [from, before) version ranges ("before" null: open-ended), read from
# kernel-open/nvidia/os-mlock.c at every release tag of
# NVIDIA/open-gpu-kernel-modules ("gup_flags |= FOLL_LONGTERM" under
# NVCPU_FAMILY_X86 && NV_FOLL_LONGTERM_PRESENT):
#   535: absent through 535.161.08; present from 535.171.04 (line 179) to
#        535.288.01 (line 233).
#   545: absent in every tag (545.23.06 to 545.29.06).
#   550: absent in 550.40.07 and 550.40.53; present 550.40.55 (line 179) to
#        550.40.85 (line 197); absent again in 550.54.14 and 550.54.15;
#        present from 550.67 (line 179) to 550.163.01 (line 233).
#   555 and later: present in every tag (555.42.02 line 179 to 595.45.04).
#   530 and older (515, 520, 525, 530): absent in every tag.
# A branch not listed (540, 551-554) is treated as without the flag. A
# profile may replace the table with param foll_longterm_drivers.
default foll_longterm_drivers := [
	{"from": "535.171.04", "before": "536"},
	{"from": "550.40.55", "before": "550.54"},
	{"from": "550.67", "before": "551"},
	{"from": "555", "before": null},
]

foll_longterm_drivers := data.fleetaudit.params.foll_longterm_drivers

# The single boundary earlier profiles set (foll_longterm_min_driver: every
# release from it on has the flag) still works, and wins over the table.
pins_longterm(v) if {
	min := data.fleetaudit.params.foll_longterm_min_driver
	not version.less(v, min)
}

pins_longterm(v) if {
	not data.fleetaudit.params.foll_longterm_min_driver
	some r in foll_longterm_drivers
	not version.less(v, r.from)
	below(v, r.before)
}

below(_, null)

below(v, before) if version.less(v, before)

# METADATA
# title: CMA area reserved on a GPU training host
# description: >-
#   hugetlb_cma (or cma) is non-zero on the running or configured kernel command
#   line, or in the one the next kernel install writes into a new boot entry
#   (/etc/kernel/cmdline on systemd-boot, the GRUB defaults where GRUB reads
#   boot entries), or /proc/meminfo shows a CMA area no boot parameter explains (a
#   distribution kernel's CONFIG_CMA_SIZE_MBYTES or CONFIG_CMA_SIZE_PERCENTAGE
#   default). The kernel then serves movable allocations, NCCL host buffers
#   among them, from MIGRATE_CMA pageblocks. When the NVIDIA driver pins such a
#   page without FOLL_LONGTERM and RDMA later registers it with FOLL_LONGTERM,
#   Linux must migrate the page out of CMA, the existing pin blocks the
#   migration, and ibv_reg_mr fails with ENOMEM ("ibv_reg_mr_iova2 ... Cannot
#   allocate memory"). Critical when both hold: RDMA devices are present and
#   the driver pins without FOLL_LONGTERM; else high. Whether a driver pins with
#   the flag on x86 is a table per branch (param foll_longterm_drivers), read
#   from kernel-open/nvidia/os-mlock.c, os_lock_user_pages, at the release tags
#   of open-gpu-kernel-modules: present from 535.171.04 in R535 (absent in
#   535.161.08), in 550.40.55-550.40.85 and from 550.67 in R550 (absent in
#   550.40.53 and in 550.54.14/550.54.15), in every 555 and later release;
#   absent in every 545 release and in 530 and older. On aarch64 the driver
#   never sets it. The incident write-up names R555.42.02 and the hazard
#   catalog 550.90.07 as the first release with the flag; the tagged sources
#   show the per-branch boundaries above, and the sources win.
# related_resources:
# - ref: https://docs.kernel.org/core-api/pin_user_pages.html
#   description: FOLL_LONGTERM pins and why they must not stay in CMA
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/535.171.04/kernel-open/nvidia/os-mlock.c#L178-L180
#   description: first R535 release whose os_lock_user_pages adds FOLL_LONGTERM on x86 (absent at tag 535.161.08)
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/550.40.55/kernel-open/nvidia/os-mlock.c#L178-L180
#   description: first R550 release with the flag (absent at 550.40.53)
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/550.54.15/kernel-open/nvidia/os-mlock.c
#   description: the R550 production releases 550.54.14 and 550.54.15 lack it; 550.67 has it again (line 179)
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/545.29.06/kernel-open/nvidia/os-mlock.c
#   description: no R545 release has it
# - ref: https://github.com/NVIDIA/open-gpu-kernel-modules/blob/555.42.02/kernel-open/nvidia/os-mlock.c#L178-L180
#   description: every R555 and later release has it
# - ref: https://docs.kernel.org/admin-guide/kernel-parameters.html
#   description: hugetlb_cma and cma boot parameters; cma=0 disables the default CMA area
# - ref: https://github.com/torvalds/linux/blob/master/kernel/dma/Kconfig
#   description: CMA_SIZE_MBYTES and CMA_SIZE_PERCENTAGE, the build-time default CMA area
# custom:
#   id: hugetlb-cma-on-gpu
#   severity: critical
#   profiles: [gpu-training]
#   image: true
#   remediation: >-
#     Set hugetlb_cma=0 (and cma=0, which also disables a kernel's built-in
#     default CMA area) in the GPU fleet's own boot configuration layer, not in
#     a base layer other fleets share, then reboot.
#   facts:
#   - boot.running.params.hugetlb_cma
#   - boot.configured.params.hugetlb_cma
#   - boot.running.params.cma
#   - boot.configured.params.cma
#   - boot.configured.present
#   - rdma.devices
#   - nvidia.driver_version
#   - nvidia.present
#   - kernel.arch
#   - memory.cma_total_kb
#   - boot.configured.kernel_cmdline.params.hugetlb_cma
#   - boot.configured.grub.params.hugetlb_cma
hugetlb_cma_on_gpu contains f if {
	not data.fleetaudit.params.hugetlb_cma_allowed
	some param in cma_params
	where := [w | some w in ["running", "configured"]; reserves(param, cma_value(w, param))]
	count(where) > 0
	value := cma_value(where[0], param)
	f := object.union(
		{
			"msg": sprintf("%s=%s on the %s kernel command line: NCCL host buffers can land in CMA pageblocks and RDMA registration then fails with ENOMEM%s", [param, value, concat(" and ", where), reasons_text]),
			"evidence": array.concat([sprintf("boot.%s.params.%s", [w, param]) | some w in where], pin_evidence),
			"severity": cma_severity,
		},
		boot_fix(where, {"kind": "boot-param", "set": {param: "0"}}),
	)
}

# Planted for the next kernel: in /etc/kernel/cmdline on systemd-boot (or
# the GRUB defaults with BLS entries), which the next kernel install writes
# into the new default entry, while the running and the default entry's
# command lines do not reserve it yet.
hugetlb_cma_on_gpu contains f if {
	not data.fleetaudit.params.hugetlb_cma_allowed
	some param in cma_params
	value := next_install.params[param]
	reserves(param, value)
	not reserves_now(param)
	f := {
		"msg": sprintf("%s=%s in %s, which the next kernel install writes into the new default boot entry: NCCL host buffers can land in CMA pageblocks and RDMA registration then fails with ENOMEM%s", [param, value, next_install.what, reasons_text]),
		"evidence": array.concat([sprintf("boot.configured.%s.params.%s", [next_install.section, param])], pin_evidence),
		"severity": cma_severity,
		"fix": {"kind": "boot-param", "set": {param: "0"}},
	}
}

reserves_now(param) if {
	some w in ["running", "configured"]
	reserves(param, cma_value(w, param))
}

# A CMA param of the running or configured command line, each read at its
# own path: the rule's result does not depend on the other params (a
# host's own root=), so hosts that differ only there share it.
cma_value("running", "hugetlb_cma") := input.boot.running.params.hugetlb_cma

cma_value("running", "cma") := input.boot.running.params.cma

cma_value("configured", "hugetlb_cma") := input.boot.configured.params.hugetlb_cma

cma_value("configured", "cma") := input.boot.configured.params.cma

# A CMA area no boot parameter explains: the kernel's build-time default
# (CONFIG_CMA_SIZE_MBYTES / _PERCENTAGE), or one set on a command line that
# was not read. cma=0 disables the default area (kernel/dma/contiguous.c:
# a size given on the command line replaces the Kconfig one).
hugetlb_cma_on_gpu contains f if {
	not data.fleetaudit.params.hugetlb_cma_allowed
	input.memory.cma_total_kb > 0
	input.boot.running.present == true
	not cma_param_explains
	f := {
		"msg": sprintf("/proc/meminfo shows a %d KiB CMA area that no hugetlb_cma= or cma= boot parameter sets (a kernel build default): NCCL host buffers can land in it and RDMA registration then fails with ENOMEM%s", [input.memory.cma_total_kb, reasons_text]),
		"evidence": array.concat(["memory.cma_total_kb", "boot.running.params"], [p | some p in pin_evidence; p != "memory.cma_total_kb"]),
		"severity": cma_severity,
		"fix": {"kind": "boot-param", "set": {"cma": "0"}},
	}
}

cma_param_explains if {
	some param in cma_params
	some w in ["running", "configured"]
	reserves(param, cma_value(w, param))
}

# boot_fix is a boot-param finding's fix, unless only the running command
# line carries the problem and the configuration was read and is clean:
# then a reboot is the remedy and a fix would change nothing.
boot_fix(where, fix) := {"fix": fix} if {
	config_change_needed(where)
} else := {}

config_change_needed(where) if "configured" in where

config_change_needed(_) if not input.boot.configured.present == true

# Sizes are read as the kernel reads them, and the kernel never rejects one:
# it takes what it can parse and silently ignores the rest.
#
# memparse() (lib/cmdline.c) is simple_strtoull(s, &end, 0): hex after "0x"
# when a hex digit follows, octal after a leading 0 (so "08G" is 0), decimal
# otherwise, stopping at the first character that is not a digit of that
# base; then one suffix letter of KMGTPE shifts the value. Nothing after that
# is checked, so "6G:" and "6G;x:y" are 6G. The value is non-zero exactly when
# the digits read hold a non-zero digit. (A shift that overflows 64 bits, as
# in "16E", reads as 0 in the kernel and still fires here: no real
# configuration writes it, and firing is the safe side.)
memparse_nonzero(s) if regex.match(`^(0[xX]0*[1-9a-fA-F]|0[0-7]*[1-7]|[1-9])`, s)

# reserves is true when the kernel reads a non-zero size for the param.
# cma= (kernel/dma/contiguous.c early_cma) is memparse(size) before "@".
reserves("cma", v) if memparse_nonzero(v)

reserves("hugetlb_cma", v) if nonzero_size(v)

# nonzero_size is true when hugetlb_cma=v reserves memory on some node, as
# cmdline_parse_hugetlb_cma (mm/hugetlb_cma.c, before that mm/hugetlb.c)
# reads v: "nn[KMGTPE]" or "<node>:nn[KMGTPE][,<node>:nn[KMGTPE]...]".
# Per comma-separated part, in order:
#   - "<decimal>:" starts a node size, read by memparse; the next part is
#     read only when that size ends exactly at the comma;
#   - a part that starts with a digit but is not a node makes the whole
#     value one global size, memparse(v) from its start ("6G;x:y" is 6G);
#   - a part that does not start with a digit ends the parse ("x:6G" is 0).
# The kernel may still drop a size read here (a node offline or beyond
# MAX_NUMNODES, a size below one gigantic page, or a global size after node
# sizes, which overwrites their total): those depend on the machine and the
# kernel version, so a size read non-zero fires.
nonzero_size(v) if {
	parts := split(v, ",")
	some i, part in parts
	reached(parts, i)
	regex.match(`^[0-9]+:(0[xX]0*[1-9a-fA-F]|0[0-7]*[1-7]|[1-9])`, part)
}

nonzero_size(v) if {
	parts := split(v, ",")
	some i, part in parts
	reached(parts, i)
	not regex.match(`^[0-9]+:`, part)
	regex.match(`^[0-9]`, part)
	memparse_nonzero(v)
}

# reached: every part before parts[i] is a node size that ends at its comma.
reached(parts, i) if {
	count([j |
		some j, p in parts
		j < i
		not regex.match(`^[0-9]+:(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)?[KkMmGgTtPpEe]?$`, p)
	]) == 0
}

# Why a pinned page in CMA turns into a failed registration on this host:
# the long-term RDMA pin (RDMA devices) and a driver pin without
# FOLL_LONGTERM. Critical needs both.
rdma_present if count(input.rdma.devices) > 0

pin_without_flag if {
	v := input.nvidia.driver_version
	not arm64
	not pins_longterm(v)
}

pin_without_flag if {
	input.nvidia.present == true
	arm64
}

pin_reasons := {why | some kind in ["rdma", "driver", "arm64"]; why := pin_reason(kind)}

pin_reason("rdma") := "RDMA devices are present" if rdma_present

pin_reason("driver") := sprintf("driver %s pins host pages without FOLL_LONGTERM", [v]) if {
	v := input.nvidia.driver_version
	not arm64
	not pins_longterm(v)
}

pin_reason("arm64") := "the driver pins host pages without FOLL_LONGTERM on aarch64" if {
	input.nvidia.present == true
	arm64
}

arm64 if input.kernel.arch in {"aarch64", "arm64"}

cma_severity := "critical" if {
	rdma_present
	pin_without_flag
} else := "high"

reasons_text := sprintf(" (%s)", [concat("; ", pin_reasons)]) if count(pin_reasons) > 0
else := ""

# Facts that explain the severity, cited when they apply.
pin_evidence := [path | some path in ["rdma.devices", "nvidia.driver_version", "kernel.arch", "memory.cma_total_kb"]; cites(path)]

cites("rdma.devices") if rdma_present

cites("nvidia.driver_version") if input.nvidia.driver_version != ""

cites("kernel.arch") if arm64

cites("memory.cma_total_kb") if input.memory.cma_total_kb > 0

# Params the boot loader adds per boot entry, never configured in the GRUB
# defaults: 10_linux writes "root=... ro" itself (and rootflags for some file
# systems), GRUB sets BOOT_IMAGE, Ubuntu's 10_linux adds vt.handoff.
loader_params := {"BOOT_IMAGE", "root", "ro", "rw", "initrd", "rootflags", "vt.handoff"}

# The params boot-config-pending compares, the loader's left out: they are
# never a change, and every host has its own (root=UUID=...). Read only
# this way, hosts that differ there share the rule's result.
running_params := object.remove(params, loader_params) if {
	params := input.boot.running.params
	is_object(params)
}

configured_params := object.remove(params, loader_params) if {
	params := input.boot.configured.params
	is_object(params)
}

# What the next boot changes, as "+p", "-p" and "p: old -> new".
pending_changes := {change |
	some p in pending_params
	change := describe_change(p)
}

describe_change(p) := sprintf("+%s", [p]) if not p in object.keys(running_params)

describe_change(p) := sprintf("-%s", [p]) if not p in object.keys(configured_params)

describe_change(p) := sprintf("%s: %s -> %s", [p, running_params[p], configured_params[p]]) if {
	running_params[p] != configured_params[p]
}

# Params a loader's install tooling writes into an entry by itself: systemd's
# kernel-install (90-loaderentry.install, systemd 252 lines 84-90) appends
# "systemd.machine_id=$MACHINE_ID" to the options of an entry named after
# the machine id ($ENTRY_TOKEN = $MACHINE_ID, the file
# <machine-id>-<version>.conf) unless the command line it was given already
# sets systemd.machine_id. Expected there, not drift.
tooling_added("systemd.machine_id") if {
	input.boot.configured.loader == "systemd-boot"
	id := lower(input.boot.configured.params["systemd.machine_id"])
	startswith(lower(default_entry.id), concat("", [id, "-"]))
}

pending_params := {p |
	some p in changed_params
	not tooling_added(p)
}

# Params on one command line only or with another value on the other; none
# unless both were read (an empty params map is left out of a snapshot).
default changed_params := set()

changed_params := {p |
	some p, v in configured_params
	not running_params[p] == v
} | {p |
	some p, v in running_params
	not configured_params[p] == v
} if {
	is_object(configured_params)
	is_object(running_params)
}

# METADATA
# title: Boot configuration differs from the running kernel command line
# description: >-
#   The command line the boot loader configuration will pass at the next boot
#   (the default boot entry where the loader reads entries, the GRUB
#   defaults, or /etc/kernel/cmdline; the loader is the one the running
#   kernel's evidence names, see boot.configured.loader_evidence) differs
#   from the one the kernel runs with, ignoring what the boot loader adds per
#   entry (BOOT_IMAGE, root, ro/rw, initrd) and what kernel-install adds by
#   itself (systemd.machine_id on an entry named after the machine id). The
#   change takes effect silently at the next reboot, for better or worse. Not
#   evaluated for rendered config repositories, which have no running state.
# related_resources:
# - ref: https://www.gnu.org/software/grub/manual/grub/html_node/Simple-configuration.html
#   description: GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT
# custom:
#   id: boot-config-pending
#   severity: medium
#   profiles: [all]
#   remediation: >-
#     Reboot the host into the configured command line in a maintenance window,
#     or revert the configuration if the change was not meant to ship.
#   facts:
#   - boot.running.params
#   - boot.configured.params
#   - boot.configured.loader
#   - boot.configured.present
#   - source.kind
boot_config_pending contains f if {
	input.source.kind != "config-repo"
	input.boot.running.present == true
	input.boot.configured.loader != ""
	# A loader whose default entry is unknown has no configured command line.
	input.boot.configured.present == true
	count(pending_changes) > 0
	f := {
		"msg": sprintf("the next boot changes the kernel command line (%s loader): %s", [input.boot.configured.loader, concat(", ", sort(pending_changes))]),
		"evidence": sort([sprintf("boot.configured.params.%s", [p]) | some p in pending_params; p in object.keys(configured_params)]),
	}
}

# Each command line's param at its own path: the rule reads those two only,
# so hosts that differ elsewhere on their command lines share its result.
mitigations_off_in("running") if input.boot.running.params.mitigations == "off"

mitigations_off_in("configured") if input.boot.configured.params.mitigations == "off"

# METADATA
# title: CPU vulnerability mitigations off on a web server
# description: >-
#   mitigations=off is on the running or configured kernel command line. It
#   disables every optional CPU side-channel mitigation (Spectre, Meltdown,
#   MDS, Retbleed, ...), acceptable on an isolated compute node and not on
#   hosts that serve untrusted traffic.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/hw-vuln/index.html
#   description: hardware vulnerabilities and their mitigations
# - ref: https://docs.kernel.org/admin-guide/kernel-parameters.html
#   description: the mitigations= parameter
# custom:
#   id: mitigations-off
#   severity: high
#   profiles: [web-serving]
#   image: true
#   remediation: >-
#     Remove mitigations=off from the web fleet's boot configuration; if a
#     shared base layer sets it for compute nodes, move it to their own layer.
#   facts:
#   - boot.running.params.mitigations
#   - boot.configured.params.mitigations
#   - boot.configured.present
mitigations_off contains f if {
	where := [w | some w in ["running", "configured"]; mitigations_off_in(w)]
	count(where) > 0
	f := object.union(
		{
			"msg": sprintf("mitigations=off on the %s kernel command line: CPU side-channel mitigations are disabled", [concat(" and ", where)]),
			"evidence": [sprintf("boot.%s.params.mitigations", [w]) | some w in where],
		},
		boot_fix(where, {"kind": "boot-param", "remove": ["mitigations"]}),
	)
}

default forbidden_params := []

forbidden_params := data.fleetaudit.params.forbidden_boot_params

default forbidden_values := {}

forbidden_values := data.fleetaudit.params.forbidden_boot_param_values

# A zero value ("0", "0M", "0x0") disables most size and count params, and is
# how a fleet switches off an inherited one: it is not the param being set.
zero_value(v) if regex.match(`^(0[xX])?0+[kKmMgGtT]?$`, v)

# Walks the (usually empty) forbidden lists, not every param of the host.
forbidden_hits := {[w, p, v] |
	some p in forbidden_params
	some w in ["running", "configured"]
	v := input.boot[w].params[p]
	not zero_value(v)
} | {[w, p, v] |
	some p, values in forbidden_values
	some w in ["running", "configured"]
	v := input.boot[w].params[p]
	v in values
}

# METADATA
# title: Boot parameter this fleet must not inherit
# description: >-
#   A kernel parameter listed in the profile's forbidden_boot_params (with any
#   value but zero), or a value listed for it in forbidden_boot_param_values,
#   is on the running or configured command line. The generic form of
#   hugetlb-cma-on-gpu: a setting another fleet needs, inherited through a
#   shared boot layer.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/kernel-parameters.html
#   description: kernel command-line parameters
# custom:
#   id: boot-param-forbidden
#   severity: high
#   profiles: [all]
#   image: true
#   remediation: >-
#     Remove the parameter (or set it to 0) in this fleet's own boot layer, and
#     move it out of any shared base layer that carries it.
#   facts:
#   - boot.running.params
#   - boot.configured.params
#   - boot.configured.present
boot_param_forbidden contains f if {
	# Most fleets forbid nothing: then no param is looked up.
	count(forbidden_params) + count(forbidden_values) > 0
	some p in {p | some [_, p, _] in forbidden_hits}
	where := sort([w | some [w, p2, _] in forbidden_hits; p2 == p])
	values := sort({v | some [_, p2, v] in forbidden_hits; p2 == p})
	# Removed rather than set to 0: zero switches off a size, but the param
	# may be a flag (nosmt=0 still disables SMT) or a list (isolcpus=0
	# isolates CPU 0).
	f := object.union(
		{
			"msg": sprintf("%s=%s on the %s kernel command line is forbidden in this fleet", [p, concat("|", values), concat(" and ", where)]),
			"evidence": [sprintf("boot.%s.params.%s", [w, p]) | some w in where],
		},
		boot_fix(where, {"kind": "boot-param", "remove": [p]}),
	)
}

# What the next grub2-mkconfig or kernel install writes into boot entries:
# on GRUB with BLS entries the GRUB defaults (10_linux sets kernelopts, or
# the entries' options, from them), on systemd-boot /etc/kernel/cmdline
# (kernel-install's 90-loaderentry). Unknown GRUB defaults compare with
# nothing.
# (An empty params map is left out of a snapshot.)
next_install := {"what": "/etc/default/grub", "section": "grub", "params": object.get(input.boot.configured.grub, "params", {})} if {
	input.boot.configured.loader == "grub-bls"
	count(object.get(input.boot.configured.grub, "unknown", [])) == 0
}

next_install := {"what": "/etc/kernel/cmdline", "section": "kernel_cmdline", "params": object.get(input.boot.configured.kernel_cmdline, "params", {})} if {
	input.boot.configured.loader == "systemd-boot"
	input.boot.configured.kernel_cmdline.present == true
}

# Params tuned keeps in its own grubenv variables ($tuned_params), which
# grub2-mkconfig leaves in the entries.
entry_managed_vars := {"tuned_params", "tuned_initrd"}

default_entry := input.boot.configured.entries[input.boot.configured.default_entry]

divergent_params := {p |
	some p, _ in object.union(input.boot.configured.params, next_install.params)
	not p in loader_params
	not object.get(default_entry, ["vars", p], "") in entry_managed_vars
	not added_by_install(p)
	entry_differs(p)
}

# The kernel install added it because the defaults do not set it.
added_by_install(p) if {
	tooling_added(p)
	not p in object.keys(next_install.params)
}

entry_differs(p) if input.boot.configured.params[p] != next_install.params[p]

entry_differs(p) if not p in object.keys(input.boot.configured.params)

entry_differs(p) if not p in object.keys(next_install.params)

param_text(p, "") := p

param_text(p, v) := sprintf("%s=%s", [p, v]) if v != ""

describe_divergence(p) := sprintf("%s only in the entry", [param_text(p, input.boot.configured.params[p])]) if {
	not p in object.keys(next_install.params)
}

describe_divergence(p) := sprintf("%s only in %s", [param_text(p, next_install.params[p]), next_install.what]) if {
	not p in object.keys(input.boot.configured.params)
}

describe_divergence(p) := sprintf("%s: %q in the entry, %q in %s", [p, input.boot.configured.params[p], next_install.params[p], next_install.what]) if {
	input.boot.configured.params[p] != next_install.params[p]
}

# METADATA
# title: Default boot entry differs from the boot loader defaults
# description: >-
#   On a host whose boot loader reads Boot Loader Specification entries
#   (/boot/loader/entries), the default entry's options and the command line
#   the defaults produce differ, ignoring what is written per entry (root,
#   ro/rw, BOOT_IMAGE, initrd, rootflags) and tuned's $tuned_params. With GRUB
#   (RHEL, Rocky, Alma, Amazon Linux 2023) the defaults are /etc/default/grub:
#   grubby --update-kernel=<one kernel> --args edits one entry and leaves them
#   behind, and the next grub2-mkconfig (which rewrites kernelopts or the
#   entries) or kernel install silently changes the boot command line back.
#   With systemd-boot the defaults are /etc/kernel/cmdline, which
#   kernel-install writes into the next kernel's entry; the
#   systemd.machine_id=<machine id> its 90-loaderentry.install appends to an
#   entry named after the machine id is expected there, not drift.
# related_resources:
# - ref: https://uapi-group.org/specifications/specs/boot_loader_specification/
#   description: Boot Loader Specification, type #1 entries and their options
# - ref: https://github.com/systemd/systemd/tree/v252/src/kernel-install
#   description: >-
#     90-loaderentry.install (Debian 12's systemd 252 ships it in /usr/lib/kernel/install.d, lines 84-90)
#     appends systemd.machine_id= to entries named after the machine id
# - ref: https://docs.redhat.com/en/documentation/red_hat_enterprise_linux/9/html/managing_monitoring_and_updating_the_kernel/configuring-kernel-command-line-parameters_managing-monitoring-and-updating-the-kernel
#   description: grubby, boot entries and GRUB_CMDLINE_LINUX on RHEL
# custom:
#   id: boot-entry-divergent
#   severity: medium
#   profiles: [all]
#   remediation: >-
#     Put the parameter where the next grub2-mkconfig and kernel install read
#     it, GRUB_CMDLINE_LINUX in /etc/default/grub (on systemd-boot
#     /etc/kernel/cmdline), and apply it to every entry (grubby
#     --update-kernel=ALL --args=...); or drop the entry's one-off parameter.
#   facts:
#   - boot.configured.loader
#   - boot.configured.params
#   - boot.configured.default_entry
#   - boot.configured.entries
#   - boot.configured.grub.params
#   - boot.configured.kernel_cmdline.params
boot_entry_divergent contains f if {
	input.boot.configured.present == true
	count(divergent_params) > 0
	f := {
		"msg": sprintf("the default boot entry %s and %s give different command lines; the next %s rewrites it: %s", [
			default_entry.file, next_install.what,
			install_step[next_install.section],
			concat(", ", sort([describe_divergence(p) | some p in divergent_params])),
		]),
		# The entry's params first: a report's "at" names the first.
		"evidence": array.concat(sort([path |
			some p in divergent_params
			some path in divergence_evidence(p)
		]), ["boot.configured.default_entry"]),
	}
}

install_step := {"grub": "grub2-mkconfig or kernel install", "kernel_cmdline": "kernel install"}

divergence_evidence(p) := {path |
	p in object.keys(input.boot.configured.params)
	path := sprintf("boot.configured.params.%s", [p])
} | {path |
	p in object.keys(next_install.params)
	path := sprintf("boot.configured.%s.params.%s", [next_install.section, p])
}

# METADATA
# title: Another boot loader is installed beside the one that boots the host
# description: >-
#   The boot loader that started the running kernel (the LoaderInfo EFI
#   variable systemd-boot sets, BOOT_IMAGE= which GRUB's linux command adds,
#   or systemd-boot's initrd=\path form) is not the one whose installed menu
#   the configuration would otherwise come from, or another loader is
#   installed with a menu of its own: systemd-boot entries on a host GRUB
#   booted, a grub.cfg on a host systemd-boot booted. Which one the firmware
#   starts next depends on its boot order, and edits to the other loader's
#   files (/etc/kernel/cmdline and the entries, or /etc/default/grub) change
#   nothing while it is not started. The collector reads the configuration of
#   the loader the evidence names (boot.configured.loader_evidence); the
#   other side is in boot.configured.loader_conflict. GRUB defaults an
#   installer left in /etc/default/grub without a grub.cfg are not a second
#   loader.
# related_resources:
# - ref: https://systemd.io/BOOT_LOADER_INTERFACE/
#   description: the LoaderInfo EFI variable systemd-boot sets at every boot
# - ref: https://www.gnu.org/software/grub/manual/grub/html_node/linux.html
#   description: GRUB's linux command, which passes BOOT_IMAGE= to the kernel
# custom:
#   id: boot-loader-conflict
#   severity: low
#   profiles: [all]
#   remediation: >-
#     Remove the boot loader the host does not use (bootctl remove, or purge
#     the grub-efi packages and their ESP directory), or set the firmware boot
#     order to the one whose configuration you maintain.
#   facts:
#   - boot.configured.loader
#   - boot.configured.loader_evidence
#   - boot.configured.loader_conflict
boot_loader_conflict contains f if {
	count(object.get(input.boot.configured, "loader_conflict", [])) > 0
	loader := object.get(input.boot.configured, "loader", "")
	f := {
		"msg": sprintf("the boot configuration is read as %s (%s); evidence of another boot loader: %s", [
			loader_name(loader),
			concat("; ", object.get(input.boot.configured, "loader_evidence", [])),
			concat("; ", input.boot.configured.loader_conflict),
		]),
		"evidence": ["boot.configured.loader_conflict", "boot.configured.loader"],
	}
}

loader_name("") := "no boot loader"

loader_name(l) := l if l != ""
