package fleetaudit.rules.boot_test

import data.fleetaudit.rules.boot

# The incident host: hugetlb_cma=6G from a shared GRUB drop-in, RDMA, R535.
# patched replaces whole top-level sections of host.
patched(host, sections) := object.union(object.remove(host, object.keys(sections)), sections)

# with_boot is the incident host with other boot params.
with_boot(running, configured) := patched(incident, {"boot": {
	"running": {"params": running},
	"configured": {"params": configured},
}})

incident := {
	"boot": {
		"running": {"params": {"hugetlb_cma": "6G", "iommu": "pt"}},
		"configured": {"params": {"hugetlb_cma": "6G", "iommu": "pt"}},
	},
	"rdma": {"devices": {"mlx5_0": {"driver": "mlx5_core", "ports": {"1": {"state": "ACTIVE"}}}}},
	"nvidia": {"present": true, "driver_version": "535.104.05", "flavor": "proprietary"},
	"kernel": {"arch": "x86_64"},
	"memory": {"cma_total_kb": 6291456},
}

test_incident_host_is_critical if {
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as incident]
	f.severity == "critical"
	f.evidence == [
		"boot.running.params.hugetlb_cma", "boot.configured.params.hugetlb_cma",
		"rdma.devices", "nvidia.driver_version", "memory.cma_total_kb",
	]
	f.fix == {"kind": "boot-param", "set": {"hugetlb_cma": "0"}}
	contains(f.msg, "hugetlb_cma=6G on the running and configured kernel command line")
	contains(f.msg, "RDMA devices are present; driver 535.104.05 pins host pages without FOLL_LONGTERM")
}

test_no_rdma_new_driver_is_high if {
	host := patched(incident, {
		"rdma": {"devices": {}},
		"nvidia": {"present": true, "driver_version": "550.90.07"},
		"memory": {"cma_total_kb": 0},
	})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.severity == "high"
	f.evidence == ["boot.running.params.hugetlb_cma", "boot.configured.params.hugetlb_cma", "nvidia.driver_version"]
}

# Critical needs both halves of the seed's failure: the RDMA long-term pin
# and a driver pin without FOLL_LONGTERM.
test_old_driver_without_rdma_is_high if {
	host := patched(incident, {"rdma": {"devices": {}}, "nvidia": {"present": true, "driver_version": "550.54.14"}})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.severity == "high"
	contains(f.msg, "driver 550.54.14 pins host pages without FOLL_LONGTERM")
}

test_rdma_with_flag_driver_is_high if {
	host := patched(incident, {"nvidia": {"present": true, "driver_version": "535.171.04"}})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.severity == "high"
	contains(f.msg, "(RDMA devices are present)")
}

# Both sides of every boundary read from the tagged os-mlock.c.
foll_longterm_cases := {
	# 530 and older: never.
	"515.105.01": false, "520.61.07": false, "525.147.05": false, "530.41.03": false,
	# 535: from 535.171.04.
	"535.43.02": false, "535.104.05": false, "535.161.08": false,
	"535.171.04": true, "535.179": true, "535.288.01": true,
	# 545: never.
	"545.23.06": false, "545.29.06": false,
	# 550: 550.40.55 to 550.40.85, not 550.54.x, from 550.67.
	"550.40.07": false, "550.40.53": false,
	"550.40.55": true, "550.40.85": true,
	"550.54.14": false, "550.54.15": false,
	"550.67": true, "550.90.07": true, "550.163.01": true,
	# 555 and later: always.
	"555.42.02": true, "560.35.03": true, "570.86.15": true, "595.45.04": true,
}

test_foll_longterm_table_boundaries if {
	every v, want in foll_longterm_cases {
		host := patched(incident, {"nvidia": {"present": true, "driver_version": v}})
		[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
		f.severity == {true: "high", false: "critical"}[want]
	}
}

test_driver_table_is_a_param if {
	host := patched(incident, {"nvidia": {"present": true, "driver_version": "550.54.14"}})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host with data.fleetaudit.params as {"foll_longterm_drivers": [{"from": "550.54", "before": "551"}]}]
	f.severity == "high"
	[g] := [g | some g in boot.hugetlb_cma_on_gpu with input as host with data.fleetaudit.params as {"foll_longterm_drivers": []}]
	g.severity == "critical"
}

# The single boundary of earlier profiles still works.
test_driver_min_is_a_param if {
	host := patched(incident, {"nvidia": {"present": true, "driver_version": "550.54.14"}})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host with data.fleetaudit.params as {"foll_longterm_min_driver": "545.23.06"}]
	f.severity == "high"
}

test_aarch64_with_rdma_is_critical_at_any_driver if {
	host := patched(incident, {
		"nvidia": {"present": true, "driver_version": "570.86.15"},
		"kernel": {"arch": "aarch64"},
	})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.severity == "critical"
	"kernel.arch" in f.evidence
}

test_aarch64_without_rdma_is_high if {
	host := patched(incident, {
		"rdma": {"devices": {}},
		"nvidia": {"present": true, "driver_version": "570.86.15"},
		"kernel": {"arch": "aarch64"},
	})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.severity == "high"
}

# A CMA area in meminfo that no boot parameter explains: a kernel default.
test_default_cma_area_is_reported if {
	host := patched(incident, {
		"boot": {"running": {"present": true, "params": {"iommu": "pt"}}, "configured": {"present": true, "params": {"iommu": "pt"}}},
		"memory": {"cma_total_kb": 65536},
	})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.severity == "critical"
	f.evidence[0] == "memory.cma_total_kb"
	f.fix == {"kind": "boot-param", "set": {"cma": "0"}}
	contains(f.msg, "65536 KiB CMA area that no hugetlb_cma= or cma= boot parameter sets")
}

test_default_cma_area_not_reported_twice_or_without_one if {
	# The boot parameter explains the area: one finding, the parameter's.
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as patched(incident, {"boot": {"running": {"present": true, "params": {"hugetlb_cma": "6G"}}, "configured": {"present": true, "params": {"hugetlb_cma": "6G"}}}})]
	f.evidence[0] == "boot.running.params.hugetlb_cma"

	# No area, or a cma=0 that removed it.
	clean := {"running": {"present": true, "params": {"cma": "0"}}, "configured": {"present": true, "params": {"cma": "0"}}}
	count(boot.hugetlb_cma_on_gpu) == 0 with input as patched(incident, {"boot": clean, "memory": {"cma_total_kb": 0}})

	# The running command line was not read: nothing says what set the area.
	count(boot.hugetlb_cma_on_gpu) == 0 with input as patched(incident, {"boot": {"configured": {"present": true, "params": {}}}})
}

test_configured_only_is_reported if {
	host := with_boot({}, {"hugetlb_cma": "6G"})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.evidence[0] == "boot.configured.params.hugetlb_cma"
	contains(f.msg, "on the configured kernel command line")
}

test_cma_param_is_reported if {
	host := with_boot({"cma": "64M@0-4G"}, {"cma": "64M@0-4G"})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as host]
	f.fix.set == {"cma": "0"}
}

test_zero_size_passes if {
	host := with_boot({"hugetlb_cma": "0"}, {"hugetlb_cma": "0G"})
	count(boot.hugetlb_cma_on_gpu) == 0 with input as host
}

test_zero_sizes if {
	every v in ["0", "0G", "0M", "0:0,1:0", "1:0", "0x0", "0x000", ""] {
		not boot.nonzero_size(v)
	}
}

test_nonzero_sizes if {
	every v in ["6G", "1", "0:1G,1:0", "1:0,0:2G", "0x40000000", "00012M", "64M@0-4G"] {
		boot.nonzero_size(v)
	}
}

# The kernel's documentation of hugetlb_cma=: "Format: nn[KMGTPE] or (node
# format) <node>:nn[KMGTPE][,<node>:nn[KMGTPE]]", with the examples of the
# commit that added it (hugetlb_cma=10G) and of its per-node form
# (hugetlb_cma=0:1G,1:1G). cma=: "nn[MG]@[start[KMG][-end[KMG]]]".
test_kernel_documentation_examples if {
	every v in ["10G", "2G", "0:1G,1:1G", "1:1G", "512M", "1T", "1P", "1E", "4096k", "0:0,1:1G"] {
		boot.reserves("hugetlb_cma", v)
	}
	every v in ["64M@0-4G", "64M", "1G@4G"] {
		boot.reserves("cma", v)
	}
}

# memparse stops at the first character that is neither a digit nor a size
# suffix and nothing checks what follows: the kernel reserves 6G for each.
test_trailing_garbage_is_what_memparse_reads if {
	every v in ["6G:", "6G;x:y", "6G:0", "6Gx", "6G 0", "6G@", "1:6G;x", "0:0,1:6G:", "0x1:6G", "010", "20%"] {
		boot.nonzero_size(v)
	}
}

test_trailing_garbage_reaches_the_finding if {
	every v in ["6G:", "6G;x:y"] {
		[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as with_boot({"hugetlb_cma": v}, {})]
		f.fix.set == {"hugetlb_cma": "0"}
	}
}

# What the kernel reads as 0 on every node: a leading non-digit ends the
# parse, octal stops at 8, and a node list stops at the first part that does
# not end at its comma.
test_kernel_reads_zero if {
	every v in ["x:6G", "G", "-6G", "+6G", "08G", "0x", "0xG", "0:0;1:6G", "0:0,x,1:6G", "1:0,x", "0:08G,1:6G", "0;6G"] {
		not boot.nonzero_size(v)
	}
}

# cma= has no node syntax: "0:1G" is memparse("0:1G"), 0.
test_cma_is_plain_memparse if {
	not boot.reserves("cma", "0:1G")
	boot.reserves("hugetlb_cma", "0:1G")
	boot.reserves("cma", "6G;x:y")
	count(boot.hugetlb_cma_on_gpu) == 0 with input as with_boot({"cma": "0:1G"}, {})
}

test_absent_param_passes if {
	host := with_boot({"iommu": "pt"}, {})
	count(boot.hugetlb_cma_on_gpu) == 0 with input as host
}

test_allowed_by_profile if {
	count(boot.hugetlb_cma_on_gpu) == 0 with input as incident with data.fleetaudit.params as {"hugetlb_cma_allowed": true}
}

test_empty_snapshot_passes if {
	count(boot.hugetlb_cma_on_gpu) == 0 with input as {}
}

pending_host(running, configured) := {
	"source": {"kind": "local"},
	"boot": {
		"running": {"present": true, "params": running},
		"configured": {"loader": "grub", "present": true, "params": configured},
	},
}

test_boot_config_pending_lists_changes if {
	h := pending_host(
		{"BOOT_IMAGE": "/boot/vmlinuz", "root": "UUID=x", "ro": "", "hugetlb_cma": "2G", "quiet": ""},
		{"hugetlb_cma": "0", "quiet": "", "iommu": "pt"},
	)
	[f] := [f | some f in boot.boot_config_pending with input as h]
	f.msg == "the next boot changes the kernel command line (grub loader): +iommu, hugetlb_cma: 2G -> 0"
	f.evidence == ["boot.configured.params.hugetlb_cma", "boot.configured.params.iommu"]
}

# A param only running, one only configured, one changed; flags ("") count.
test_boot_config_pending_both_ways if {
	h := pending_host(
		{"root": "UUID=x", "quiet": "", "iommu": "pt", "nosmt": ""},
		{"root": "UUID=y", "iommu": "off", "nosmt": "", "splash": ""},
	)
	[f] := [f | some f in boot.boot_config_pending with input as h]
	f.msg == "the next boot changes the kernel command line (grub loader): +splash, -quiet, iommu: pt -> off"
	f.evidence == ["boot.configured.params.iommu", "boot.configured.params.splash"]
}

# An empty params map is left out of a snapshot: nothing is compared then.
test_boot_config_pending_needs_both_param_maps if {
	h := pending_host({"quiet": ""}, {"iommu": "pt"})
	count(boot.boot_config_pending) == 0 with input as json.remove(h, ["boot/configured/params"])
	count(boot.boot_config_pending) == 0 with input as json.remove(h, ["boot/running/params"])
}

test_boot_config_pending_ignores_loader_params if {
	h := pending_host({"BOOT_IMAGE": "/boot/vmlinuz", "root": "UUID=x", "ro": "", "quiet": ""}, {"quiet": ""})
	count(boot.boot_config_pending) == 0 with input as h
}

# The rule sees the params less the loader's (so hosts that differ there
# share its result): the same findings whatever loader params either side has.
test_boot_config_pending_same_whatever_the_loader_params if {
	running := {"hugetlb_cma": "2G", "quiet": ""}
	configured := {"hugetlb_cma": "0", "iommu": "pt"}
	want := boot.boot_config_pending with input as pending_host(running, configured)
	count(want) == 1
	every loader in [{"root": "UUID=x", "ro": ""}, {"BOOT_IMAGE": "/boot/vmlinuz-6.8", "rw": "", "initrd": "/initrd.img", "rootflags": "subvol=@", "vt.handoff": "7"}] {
		boot.boot_config_pending == want with input as pending_host(object.union(running, loader), configured)
		boot.boot_config_pending == want with input as pending_host(running, object.union(configured, loader))
	}
}

# Params that are not a map are not compared, as params left out.
test_boot_config_pending_needs_param_maps if {
	count(boot.boot_config_pending) == 0 with input as pending_host("quiet", {"iommu": "pt"})
	count(boot.boot_config_pending) == 0 with input as pending_host({"quiet": ""}, ["iommu"])
}

test_boot_config_pending_not_on_config_repo if {
	h := object.union(pending_host({"quiet": ""}, {"hugetlb_cma": "0"}), {"source": {"kind": "config-repo"}})
	count(boot.boot_config_pending) == 0 with input as h
}

test_boot_config_pending_needs_a_loader if {
	h := object.union(pending_host({"quiet": ""}, {}), {"boot": {"configured": {"loader": "", "present": false, "params": {}}}})
	count(boot.boot_config_pending) == 0 with input as h
}

test_mitigations_off_configured if {
	h := {"boot": {"running": {"params": {"mitigations": "auto"}}, "configured": {"params": {"mitigations": "off"}}}}
	[f] := [f | some f in boot.mitigations_off with input as h]
	f.evidence == ["boot.configured.params.mitigations"]
}

test_mitigations_auto_passes if {
	h := {"boot": {"running": {"params": {"mitigations": "auto,nosmt"}}, "configured": {"params": {}}}}
	count(boot.mitigations_off) == 0 with input as h
}

test_forbidden_param if {
	h := {"boot": {"running": {"params": {"numa": "off"}}, "configured": {"params": {"numa": "off"}}}}
	[f] := [f | some f in boot.boot_param_forbidden with input as h with data.fleetaudit.params as {"forbidden_boot_params": ["numa"]}]
	f.msg == "numa=off on the configured and running kernel command line is forbidden in this fleet"
	f.evidence == ["boot.configured.params.numa", "boot.running.params.numa"]
}

test_forbidden_param_zero_is_allowed if {
	h := {"boot": {"running": {"params": {"hugetlb_cma": "0"}}, "configured": {"params": {"hugetlb_cma": "0G"}}}}
	count(boot.boot_param_forbidden) == 0 with input as h with data.fleetaudit.params as {"forbidden_boot_params": ["hugetlb_cma"]}
}

test_forbidden_value if {
	h := {"boot": {"running": {"params": {"mitigations": "off"}}, "configured": {"params": {"mitigations": "auto"}}}}
	params := {"forbidden_boot_param_values": {"mitigations": ["off"]}}
	[f] := [f | some f in boot.boot_param_forbidden with input as h with data.fleetaudit.params as params]
	f.evidence == ["boot.running.params.mitigations"]
}

test_nothing_forbidden_by_default if {
	h := {"boot": {"running": {"params": {"hugetlb_cma": "6G"}}, "configured": {"params": {}}}}
	count(boot.boot_param_forbidden) == 0 with input as h
}

# A profile may list nothing explicitly, or forbid only values.
test_forbidden_lists_empty_or_values_only if {
	h := {"boot": {"running": {"params": {"hugetlb_cma": "6G", "iommu": "off"}}, "configured": {"params": {"iommu": "off"}}}}
	count(boot.boot_param_forbidden) == 0 with input as h with data.fleetaudit.params as {"forbidden_boot_params": [], "forbidden_boot_param_values": {}}
	[f] := [f | some f in boot.boot_param_forbidden] with input as h with data.fleetaudit.params as {"forbidden_boot_params": [], "forbidden_boot_param_values": {"iommu": ["off"]}}
	f.evidence == ["boot.configured.params.iommu", "boot.running.params.iommu"]
}

test_mitigations_off_fix_removes_the_param if {
	h := {"boot": {"running": {"params": {"mitigations": "off"}}, "configured": {"params": {"mitigations": "off"}}}}
	[f] := [f | some f in boot.mitigations_off with input as h]
	f.fix == {"kind": "boot-param", "remove": ["mitigations"]}
}

# A forbidden param is removed, whatever its form: "0" would switch off a
# size but not a flag or a list.
test_forbidden_param_fix_removes_only_that_param if {
	h := {"boot": {"running": {"params": {"numa": "off", "isolcpus": "2-7", "quiet": ""}}, "configured": {"params": {"numa": "off", "isolcpus": "2-7"}}}}
	params := {"forbidden_boot_params": ["numa", "isolcpus"], "forbidden_boot_param_values": {"quiet": [""]}}
	findings := boot.boot_param_forbidden with input as h with data.fleetaudit.params as params
	{[f.evidence[0], f.fix] | some f in findings} == {
		["boot.configured.params.numa", {"kind": "boot-param", "remove": ["numa"]}],
		["boot.configured.params.isolcpus", {"kind": "boot-param", "remove": ["isolcpus"]}],
		["boot.running.params.quiet", {"kind": "boot-param", "remove": ["quiet"]}],
	}
}

# Only the running command line reserves CMA and the configuration read is
# clean: a reboot is the remedy, a fix would change nothing.
test_running_only_with_clean_configuration_has_no_fix if {
	clean := patched(incident, {"boot": {
		"running": {"params": {"hugetlb_cma": "6G", "mitigations": "off", "numa": "off"}},
		"configured": {"present": true, "params": {"hugetlb_cma": "0"}},
	}})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as clean]
	not f.fix
	[g] := [g | some g in boot.mitigations_off with input as clean]
	not g.fix
	[h] := [h | some h in boot.boot_param_forbidden with input as clean with data.fleetaudit.params as {"forbidden_boot_params": ["numa"]}]
	not h.fix

	# The configuration was not read: the fix makes sure of it.
	unread := patched(clean, {"boot": {"running": clean.boot.running, "configured": {"present": false, "params": {}}}})
	[u] := [u | some u in boot.hugetlb_cma_on_gpu with input as unread]
	u.fix == {"kind": "boot-param", "set": {"hugetlb_cma": "0"}}
}

test_boot_config_pending_needs_a_known_default_entry if {
	h := object.union(pending_host({"quiet": ""}, {}), {"boot": {"configured": {"loader": "grub-bls", "present": false, "params": {}}}})
	count(boot.boot_config_pending) == 0 with input as h
}

# A Rocky 9 host where grubby --update-kernel=<default> --args=hugetlb_cma=4G
# edited the default entry only.
bls_host(entry_params, entry_vars, grub_params) := {"boot": {"configured": {
	"loader": "grub-bls",
	"present": true,
	"params": entry_params,
	"default_entry": 0,
	"entries": [{"file": "/boot/loader/entries/x-5.14.0.conf", "params": entry_params, "vars": entry_vars}],
	"grub": {"params": grub_params},
}}}

rocky_base := {"root": "/dev/mapper/rl-root", "ro": "", "crashkernel": "1G-4G:192M", "resume": "/dev/mapper/rl-swap"}

test_boot_entry_divergent_grubby_one_kernel if {
	h := bls_host(object.union(rocky_base, {"hugetlb_cma": "4G"}), {}, object.remove(rocky_base, ["root", "ro"]))
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	f.msg == "the default boot entry /boot/loader/entries/x-5.14.0.conf and /etc/default/grub give different command lines; the next grub2-mkconfig or kernel install rewrites it: hugetlb_cma=4G only in the entry"
	f.evidence == ["boot.configured.params.hugetlb_cma", "boot.configured.default_entry"]
}

test_boot_entry_divergent_both_ways if {
	h := bls_host({"quiet": "", "console": "ttyS0"}, {}, {"console": "tty0", "rhgb": ""})
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	f.msg == `the default boot entry /boot/loader/entries/x-5.14.0.conf and /etc/default/grub give different command lines; the next grub2-mkconfig or kernel install rewrites it: console: "ttyS0" in the entry, "tty0" in /etc/default/grub, quiet only in the entry, rhgb only in /etc/default/grub`
	f.evidence == [
		"boot.configured.grub.params.console", "boot.configured.grub.params.rhgb",
		"boot.configured.params.console", "boot.configured.params.quiet",
		"boot.configured.default_entry",
	]
}

test_boot_entry_in_step_with_defaults if {
	h := bls_host(rocky_base, {}, object.remove(rocky_base, ["root", "ro"]))
	count(boot.boot_entry_divergent) == 0 with input as h
}

test_boot_entry_tuned_params_are_not_divergence if {
	# RHEL 8: $kernelopts from the defaults, $tuned_params from tuned.
	h := bls_host(
		object.union(rocky_base, {"nohz_full": "2-31", "skew_tick": "1"}),
		{"resume": "kernelopts", "crashkernel": "kernelopts", "nohz_full": "tuned_params", "skew_tick": "tuned_params"},
		object.remove(rocky_base, ["root", "ro"]),
	)
	count(boot.boot_entry_divergent) == 0 with input as h
}

test_boot_entry_divergent_not_for_plain_grub if {
	h := object.union(bls_host({"hugetlb_cma": "4G"}, {}, {}), {"boot": {"configured": {"loader": "grub"}}})
	count(boot.boot_entry_divergent) == 0 with input as h
}

test_boot_entry_divergent_not_with_unknown_defaults if {
	h := object.union(bls_host({"hugetlb_cma": "4G"}, {}, {}), {"boot": {"configured": {"grub": {"params": {}, "unknown": ["GRUB_CMDLINE_LINUX"]}}}})
	count(boot.boot_entry_divergent) == 0 with input as h
}

test_boot_entry_divergent_not_without_a_default_entry if {
	h := object.union(bls_host({"hugetlb_cma": "4G"}, {}, {}), {"boot": {"configured": {"present": false}}})
	count(boot.boot_entry_divergent) == 0 with input as h
}

test_boot_entry_divergent_systemd_boot_kernel_cmdline if {
	h := {"boot": {"configured": {
		"loader": "systemd-boot",
		"present": true,
		"params": {"root": "UUID=1", "ro": "", "hugetlb_cma": "2G", "iommu": "pt"},
		"default_entry": 0,
		"entries": [{"file": "/efi/loader/entries/a-6.8.5.conf", "params": {}}],
		"kernel_cmdline": {"present": true, "params": {"root": "UUID=1", "ro": "", "iommu": "pt"}},
	}}}
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	f.msg == "the default boot entry /efi/loader/entries/a-6.8.5.conf and /etc/kernel/cmdline give different command lines; the next kernel install rewrites it: hugetlb_cma=2G only in the entry"
	f.evidence == ["boot.configured.params.hugetlb_cma", "boot.configured.default_entry"]
}

test_boot_entry_divergent_systemd_boot_without_kernel_cmdline if {
	h := {"boot": {"configured": {
		"loader": "systemd-boot", "present": true, "params": {"hugetlb_cma": "2G"},
		"default_entry": 0, "entries": [{"file": "/efi/loader/entries/a.conf", "params": {}}],
	}}}
	count(boot.boot_entry_divergent) == 0 with input as h
}

test_boot_entry_divergent_empty_defaults_are_left_out if {
	# GRUB defaults with no params: the snapshot leaves grub.params out.
	h := object.union(bls_host({"root": "/dev/sda", "ro": "", "quiet": ""}, {}, {}), {"boot": {"configured": {"grub": {"files": ["/etc/default/grub"]}}}})
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	contains(f.msg, "quiet only in the entry")
}

# A Debian 12 host with systemd-boot: kernel-install's 90-loaderentry.install
# wrote the entry from /etc/kernel/cmdline and appended
# systemd.machine_id=<machine id>, the entry being named after it.
sdboot_mid := "0a1b2c3d4e5f40718293a4b5c6d7e8f9"

sdboot_host(entry_params, kernel_cmdline) := {"boot": {
	"running": {"present": true, "params": object.union(entry_params, {"initrd": `\0a1b\6.1.0-18-amd64\initrd.img-6.1.0-18-amd64`})},
	"configured": {
		"loader": "systemd-boot",
		"present": true,
		"params": entry_params,
		"default_entry": 0,
		"entries": [{"id": concat("", [sdboot_mid, "-6.1.0-18-amd64.conf"]), "file": concat("", ["/efi/loader/entries/", sdboot_mid, "-6.1.0-18-amd64.conf"]), "params": entry_params}],
		"kernel_cmdline": {"present": true, "params": kernel_cmdline},
	},
}}

test_boot_entry_machine_id_from_kernel_install_is_not_divergence if {
	h := sdboot_host({"root": "UUID=1", "ro": "", "quiet": "", "systemd.machine_id": sdboot_mid}, {"root": "UUID=1", "ro": "", "quiet": ""})
	count(boot.boot_entry_divergent) == 0 with input as h
	count(boot.boot_config_pending) == 0 with input as h
}

test_boot_entry_machine_id_other_than_the_token_is_divergence if {
	# Not the id the entry is named after: kernel-install did not write it.
	h := sdboot_host({"root": "UUID=1", "systemd.machine_id": "ffffffffffffffffffffffffffffffff"}, {"root": "UUID=1"})
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	contains(f.msg, "systemd.machine_id=ffffffffffffffffffffffffffffffff only in the entry")
}

test_boot_entry_machine_id_differing_from_kernel_cmdline_is_divergence if {
	# /etc/kernel/cmdline sets its own: the script does not append (line 88).
	h := sdboot_host({"root": "UUID=1", "systemd.machine_id": sdboot_mid}, {"root": "UUID=1", "systemd.machine_id": "ffffffffffffffffffffffffffffffff"})
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	contains(f.msg, "systemd.machine_id: ")
}

test_boot_entry_machine_id_on_grub_is_divergence if {
	h := object.union(bls_host({"systemd.machine_id": "x"}, {}, {}), {"boot": {"configured": {"entries": [{"id": "x-5.14.0", "file": "/boot/loader/entries/x-5.14.0.conf", "params": {}}]}}})
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	contains(f.msg, "systemd.machine_id=x only in the entry")
}

test_boot_entry_kernel_cmdline_param_not_yet_in_the_entry if {
	h := sdboot_host({"root": "UUID=1", "systemd.machine_id": sdboot_mid}, {"root": "UUID=1", "hugetlb_cma": "6G"})
	[f] := [f | some f in boot.boot_entry_divergent with input as h]
	endswith(f.msg, "hugetlb_cma=6G only in /etc/kernel/cmdline")
	f.evidence == ["boot.configured.kernel_cmdline.params.hugetlb_cma", "boot.configured.default_entry"]
}

test_boot_loader_conflict if {
	h := {"boot": {"configured": {
		"loader": "grub",
		"loader_evidence": ["BOOT_IMAGE= in /proc/cmdline", "GRUB defaults: /etc/default/grub"],
		"loader_conflict": ["systemd-boot entries: /efi/loader/entries"],
	}}}
	[f] := [f | some f in boot.boot_loader_conflict with input as h]
	f.msg == "the boot configuration is read as grub (BOOT_IMAGE= in /proc/cmdline; GRUB defaults: /etc/default/grub); evidence of another boot loader: systemd-boot entries: /efi/loader/entries"
	f.evidence == ["boot.configured.loader_conflict", "boot.configured.loader"]
}

test_boot_loader_conflict_not_without_one if {
	h := {"boot": {"configured": {"loader": "systemd-boot", "loader_evidence": ["LoaderInfo EFI variable: systemd-boot 252.39-1~deb12u2"]}}}
	count(boot.boot_loader_conflict) == 0 with input as h
	count(boot.boot_loader_conflict) == 0 with input as {}
}

test_hugetlb_cma_planted_in_kernel_cmdline if {
	h := object.union(sdboot_host({"root": "UUID=1", "systemd.machine_id": sdboot_mid}, {"root": "UUID=1", "hugetlb_cma": "6G"}), {"nvidia": {"present": true, "driver_version": "550.90.07"}})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as h]
	startswith(f.msg, "hugetlb_cma=6G in /etc/kernel/cmdline, which the next kernel install writes into the new default boot entry")
	f.evidence[0] == "boot.configured.kernel_cmdline.params.hugetlb_cma"
	f.severity == "high"
	f.fix == {"kind": "boot-param", "set": {"hugetlb_cma": "0"}}
}

test_hugetlb_cma_in_the_entry_is_reported_once if {
	p := {"root": "UUID=1", "hugetlb_cma": "6G", "systemd.machine_id": sdboot_mid}
	h := sdboot_host(p, {"root": "UUID=1", "hugetlb_cma": "6G"})
	[f] := [f | some f in boot.hugetlb_cma_on_gpu with input as h]
	startswith(f.msg, "hugetlb_cma=6G on the running and configured kernel command line")
}

test_hugetlb_cma_zero_in_kernel_cmdline_passes if {
	h := sdboot_host({"root": "UUID=1"}, {"root": "UUID=1", "hugetlb_cma": "0"})
	count(boot.hugetlb_cma_on_gpu) == 0 with input as h
}

# pending_params agrees with its first form: every param of either map (both
# read) but the loader's whose value differs or that one map lacks.
union_differs(p, h) if h.boot.configured.params[p] != h.boot.running.params[p]

union_differs(p, h) if not p in object.keys(h.boot.running.params)

union_differs(p, h) if not p in object.keys(h.boot.configured.params)

test_pending_params_as_union_of_keys if {
	maps := [{}, {"quiet": ""}, {"quiet": "1"}, {"root": "UUID=x", "ro": ""}, {"iommu": "pt", "quiet": ""}, {"iommu": "off", "nosmt": ""}]
	every running in maps {
		every configured in maps {
			h := pending_host(running, configured)
			want := {p |
				some p, _ in object.union(configured, running)
				not p in boot.loader_params
				union_differs(p, h)
			}
			boot.pending_params == want with input as h
		}
	}
}
