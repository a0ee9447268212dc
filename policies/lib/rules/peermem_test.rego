package fleetaudit.rules.peermem_test

import data.fleetaudit.rules.peermem

host(loaded, configured, driver) := {
	"modules": {"loaded": loaded, "configured": configured},
	"nvidia": {"present": true, "driver_version": driver, "flavor": "proprietary"},
	"kernel": {"release": "5.15.0-105-generic"},
	"rdma": {"devices": {"mlx5_0": {"driver": "mlx5_core"}}},
}

test_dual_modules_loaded_and_configured if {
	h := host(["nv_peer_mem", "nvidia"], {"nvidia_peermem": true}, "550.90.07")
	[f] := [f | some f in peermem.peermem_dual_modules with input as h]
	f.msg == "nv_peer_mem (loaded) and nvidia_peermem (configured to load) are both present; only nvidia_peermem may be used"
	f.evidence == ["modules.loaded", "modules.configured.nvidia_peermem"]
}

test_single_module_passes if {
	count(peermem.peermem_dual_modules) == 0 with input as host(["nvidia_peermem"], {"nvidia_peermem": true}, "550.90.07")
}

# Both sides of every boundary read from the tagged nvidia-peermem.c:
# "high" unmitigated, "low" mitigated, "none" fixed.
race_cases := {
	"515.105.01": "high", "520.61.07": "high",
	"525.47.18": "high", "525.47.22": "high", "525.89.02": "high",
	"525.105.17": "high", "525.147.05": "high",
	"530.41.03": "high",
	"535.43.02": "high", "535.43.23": "high", "535.43.24": "low", "535.43.28": "low",
	"535.54.03": "high", "535.104.05": "high", "535.113.01": "high",
	"535.129.03": "low", "535.288.01": "low",
	"545.23.06": "high", "545.29.06": "high",
	"550.40.07": "low", "550.54.15": "low", "550.163.01": "low",
	"555.42.02": "low", "555.58.02": "low",
	"560.28.03": "none", "570.133.20": "none", "595.45.04": "none",
}

test_race_boundaries if {
	every v, want in race_cases {
		got := [f.severity | some f in peermem.peermem_teardown_race with input as host(["nvidia_peermem"], {}, v)]
		got == {"none": [], "high": ["high"], "low": ["low"]}[want]
	}
}

test_race_message_says_why if {
	[f] := [f | some f in peermem.peermem_teardown_race with input as host(["nvidia_peermem"], {}, "525.105.17")]
	contains(f.msg, "(unmitigated; only the opt-in nv_mem_nc client avoids it)")
	[g] := [g | some g in peermem.peermem_teardown_race with input as host(["nvidia_peermem"], {}, "520.61.07")]
	contains(g.msg, "(unmitigated, and no persistent get_pages API to avoid it)")
	[h] := [h | some h in peermem.peermem_teardown_race with input as host(["nvidia_peermem"], {}, "550.90.07")]
	contains(h.msg, "(mitigated only; the fix is R560)")
}

test_race_table_is_a_param if {
	h := host(["nvidia_peermem"], {}, "545.29.06")
	params := {"peermem_race_drivers": {"mitigated": [{"from": "545", "before": "546"}], "fixed": []}}
	[f] := [f | some f in peermem.peermem_teardown_race with input as h with data.fleetaudit.params as params]
	f.severity == "low"
	[g] := [g | some g in peermem.peermem_teardown_race with input as host(["nvidia_peermem"], {}, "570.133.20") with data.fleetaudit.params as params]
	g.severity == "high"
}

test_race_needs_a_version if {
	count(peermem.peermem_teardown_race) == 0 with input as host(["nvidia_peermem"], {}, "")
}

test_race_needs_the_module if {
	count(peermem.peermem_teardown_race) == 0 with input as host(["nvidia"], {}, "535.104.05")
}

test_gpudirect_missing_with_proprietary_module if {
	[f] := [f | some f in peermem.gpudirect_path_missing with input as host(["nvidia"], {}, "550.90.07")]
	contains(f.msg, "proprietary kernel module")
	not contains(f.msg, "older than 5.12")
}

test_gpudirect_missing_on_old_kernel if {
	h := object.union(host(["nvidia"], {}, "550.90.07"), {"nvidia": {"flavor": "open"}, "kernel": {"release": "5.4.0-150-generic"}})
	[f] := [f | some f in peermem.gpudirect_path_missing with input as h]
	contains(f.msg, "kernel 5.4.0-150-generic is older than 5.12")
}

test_gpudirect_dmabuf_possible if {
	h := object.union(host(["nvidia"], {}, "550.90.07"), {"nvidia": {"flavor": "open"}, "kernel": {"release": "6.8.0-45-generic"}})
	count(peermem.gpudirect_path_missing) == 0 with input as h
}

test_gpudirect_peermem_loaded if {
	count(peermem.gpudirect_path_missing) == 0 with input as host(["nvidia_peermem"], {}, "550.90.07")
}

test_gpudirect_no_rdma if {
	h := object.union(object.remove(host(["nvidia"], {}, "550.90.07"), ["rdma"]), {"rdma": {"devices": {}}})
	count(peermem.gpudirect_path_missing) == 0 with input as h
}

test_dual_modules_fix_blacklists_nv_peer_mem if {
	h := host(["nv_peer_mem", "nvidia"], {"nvidia_peermem": true}, "550.90.07")
	[f] := [f | some f in peermem.peermem_dual_modules with input as h]
	f.fix == {"kind": "modules", "blacklist": ["nv_peer_mem"]}
}

# nvidia_peermem loaded but not configured: blacklisting nv_peer_mem alone
# would leave no peer-memory module after the next boot.
test_dual_modules_fix_keeps_nvidia_peermem_at_boot if {
	h := host(["nv_peer_mem", "nvidia_peermem"], {"nv_peer_mem": true}, "550.90.07")
	[f] := [f | some f in peermem.peermem_dual_modules with input as h]
	f.fix == {"kind": "modules", "load": ["nvidia_peermem"], "blacklist": ["nv_peer_mem"]}
}

test_gpudirect_fix_loads_nvidia_peermem if {
	[f] := [f | some f in peermem.gpudirect_path_missing with input as host(["nvidia"], {}, "550.90.07")]
	f.fix == {"kind": "modules", "load": ["nvidia_peermem"]}

	# Configured and still not loaded: listing it again fixes nothing.
	[g] := [g | some g in peermem.gpudirect_path_missing with input as host(["nvidia"], {"nvidia_peermem": true}, "550.90.07")]
	not g.fix
}

# modules-load.d lists both; nv_peer_mem is not loaded now.
both_configured := host(["nvidia", "nvidia_peermem"], {"nv_peer_mem": true, "nvidia_peermem": true}, "550.90.07")

with_modprobe(h, modprobe) := object.union(h, {"modules": modprobe})

test_dual_modules_both_configured if {
	[f] := [f | some f in peermem.peermem_dual_modules with input as both_configured]
	f.msg == "nv_peer_mem (configured to load) and nvidia_peermem (loaded and configured to load) are both present; only nvidia_peermem may be used"
	f.evidence == ["modules.loaded", "modules.configured.nv_peer_mem", "modules.configured.nvidia_peermem"]
}

# systemd-modules-load applies kmod's blacklist to the modules it loads.
test_dual_modules_blacklist_stops_boot_load if {
	h := with_modprobe(both_configured, {"blacklisted": {"nv_peer_mem": true}})
	count(peermem.peermem_dual_modules) == 0 with input as h
}

test_dual_modules_install_noop_stops_boot_load if {
	every cmd in ["/bin/false", "/bin/true", "/usr/bin/false", "true", " /bin/false "] {
		count(peermem.peermem_dual_modules) == 0 with input as with_modprobe(both_configured, {"install": {"nv_peer_mem": cmd}})
	}
}

test_dual_modules_install_pattern_stops_boot_load if {
	h := with_modprobe(both_configured, {"install": {"nv_peer*": "/bin/false"}})
	count(peermem.peermem_dual_modules) == 0 with input as h
}

test_dual_modules_exact_install_before_pattern if {
	h := with_modprobe(both_configured, {"install": {"nv_peer_mem": "/sbin/modprobe --ignore-install nv_peer_mem", "nv_*": "/bin/false"}})
	count(peermem.peermem_dual_modules) == 1 with input as h
}

# An install command that loads the module, or a block of another module,
# leaves it set to load.
test_dual_modules_loading_install_or_other_blacklist if {
	every modprobe in [
		{"install": {"nv_peer_mem": "/sbin/modprobe --ignore-install nv_peer_mem $CMDLINE_OPTS"}},
		{"install": {"nv_peer_mem": "/bin/false; /sbin/modprobe --ignore-install nv_peer_mem"}},
		{"blacklisted": {"nouveau": true}, "install": {"nouveau": "/bin/false"}},
	] {
		count(peermem.peermem_dual_modules) == 1 with input as with_modprobe(both_configured, modprobe)
	}
}

# Blocking boot does not unload a running module.
test_dual_modules_blacklisted_but_loaded if {
	h := with_modprobe(host(["nv_peer_mem", "nvidia_peermem"], {"nv_peer_mem": true, "nvidia_peermem": true}, "550.90.07"), {"blacklisted": {"nv_peer_mem": true}})
	[f] := [f | some f in peermem.peermem_dual_modules with input as h]
	f.msg == "nv_peer_mem (loaded) and nvidia_peermem (loaded and configured to load) are both present; only nvidia_peermem may be used"
	f.evidence == ["modules.loaded", "modules.configured.nvidia_peermem"]
}

# A blocked nvidia_peermem is not set to load either.
test_dual_modules_nvidia_peermem_blocked if {
	h := with_modprobe(host(["nv_peer_mem"], {"nv_peer_mem": true, "nvidia_peermem": true}, "550.90.07"), {"blacklisted": {"nvidia_peermem": true}})
	count(peermem.peermem_dual_modules) == 0 with input as h
}

# A host where DMA-BUF works: open module, 6.8 kernel, CUDA 12.4, rdma-core
# 50, NCCL 2.21.
dmabuf_host(loaded, configured) := object.union(host(loaded, configured, "550.90.07"), {
	"nvidia": {"flavor": "open"},
	"kernel": {"release": "6.8.0-45-generic"},
	"libraries": {
		"cuda": [{"version": "12.4.127"}],
		"verbs": [{"version": "50.0"}],
		"nccl": [{"version": "2.21.5"}],
	},
	"nccl_config": {"effective": {}},
	"source": {"kind": "local"},
})

with_libs(h, libs) := object.union(h, {"libraries": libs})

# Both sides of each DMA-BUF prerequisite.
test_gpudirect_dmabuf_prerequisites if {
	h := dmabuf_host(["nvidia"], {})
	count(peermem.gpudirect_path_missing) == 0 with input as h

	# CUDA 11.7 is the first with cuMemGetHandleForAddressRange; 11.6 lacks it.
	count(peermem.gpudirect_path_missing) == 0 with input as with_libs(h, {"cuda": [{"version": "11.7.99"}]})
	[c] := [c | some c in peermem.gpudirect_path_missing with input as with_libs(h, {"cuda": [{"version": "11.6.55"}]})]
	contains(c.msg, "every CUDA runtime on the host is older than 11.7 (11.6.55)")
	"libraries.cuda" in c.evidence

	# One new enough runtime, or a bare soname major, blocks nothing.
	count(peermem.gpudirect_path_missing) == 0 with input as with_libs(h, {"cuda": [{"version": "11.4.1"}, {"version": "12.2.140"}]})
	count(peermem.gpudirect_path_missing) == 0 with input as with_libs(h, {"cuda": [{"version": "11"}]})

	# rdma-core 34 added ibv_reg_dmabuf_mr; 33 lacks it; an MLNX_OFED name is unknown.
	count(peermem.gpudirect_path_missing) == 0 with input as with_libs(h, {"verbs": [{"version": "34.0"}]})
	[r] := [r | some r in peermem.gpudirect_path_missing with input as with_libs(h, {"verbs": [{"version": "33.1"}]})]
	contains(r.msg, "rdma-core 33.1 is older than 34")
	count(peermem.gpudirect_path_missing) == 0 with input as with_libs(h, {"verbs": [{"version": "unknown"}]})

	# NCCL 2.13 added DMA-BUF.
	count(peermem.gpudirect_path_missing) == 0 with input as with_libs(h, {"nccl": [{"version": "2.13.4"}]})
	count(peermem.gpudirect_path_missing) == 1 with input as with_libs(h, {"nccl": [{"version": "2.12.12"}]})

	# NCCL_DMABUF_ENABLE=0 switches it off; 1 is the default.
	[e] := [e | some e in peermem.gpudirect_path_missing with input as object.union(h, {"nccl_config": {"effective": {"NCCL_DMABUF_ENABLE": "0"}}})]
	e.evidence == ["rdma.devices", "modules.loaded", "nccl_config.effective.NCCL_DMABUF_ENABLE"]
	count(peermem.gpudirect_path_missing) == 0 with input as object.union(h, {"nccl_config": {"effective": {"NCCL_DMABUF_ENABLE": "1"}}})

	# A snapshot from before libraries.verbs existed says nothing of rdma-core.
	count(peermem.gpudirect_path_missing) == 0 with input as object.union(h, {"libraries": {"verbs": null}})
}

test_configured_not_loaded if {
	# DMA-BUF possible: medium.
	[m] := [m | some m in peermem.peermem_configured_not_loaded with input as dmabuf_host(["nvidia"], {"nvidia_peermem": true})]
	m.severity == "medium"
	m.evidence == ["modules.configured.nvidia_peermem", "modules.loaded"]

	# No fix: the configuration already loads it (see the rule).
	not "fix" in object.keys(m)

	# DMA-BUF impossible (proprietary module): high, with the reason.
	h := object.union(dmabuf_host(["nvidia"], {"nvidia_peermem": true}), {"nvidia": {"flavor": "proprietary"}})
	[f] := [f | some f in peermem.peermem_configured_not_loaded with input as h]
	f.severity == "high"
	contains(f.msg, "DMA-BUF cannot replace it (the driver is the proprietary kernel module")
	f.evidence == ["modules.configured.nvidia_peermem", "modules.loaded", "nvidia.flavor"]

	# Loaded, blocked by modprobe.d, not configured, a rendered config repo,
	# or no driver loaded: nothing.
	count(peermem.peermem_configured_not_loaded) == 0 with input as dmabuf_host(["nvidia", "nvidia_peermem"], {"nvidia_peermem": true})
	count(peermem.peermem_configured_not_loaded) == 0 with input as with_modprobe(dmabuf_host(["nvidia"], {"nvidia_peermem": true}), {"blacklisted": {"nvidia_peermem": true}})
	count(peermem.peermem_configured_not_loaded) == 0 with input as dmabuf_host(["nvidia"], {})
	count(peermem.peermem_configured_not_loaded) == 0 with input as object.union(dmabuf_host(["nvidia"], {"nvidia_peermem": true}), {"source": {"kind": "config-repo"}})
	count(peermem.peermem_configured_not_loaded) == 0 with input as object.union(dmabuf_host(["nvidia"], {"nvidia_peermem": true}), {"nvidia": {"present": false}})
}

test_absent_dmabuf_only if {
	[f] := [f | some f in peermem.peermem_absent_dmabuf_only with input as dmabuf_host(["nvidia"], {})]
	f.fix == {"kind": "modules", "load": ["nvidia_peermem"]}
	f.evidence == ["rdma.devices", "modules.loaded", "nvidia.flavor", "kernel.release"]

	# Not when peermem is there or configured, DMA-BUF is impossible or not
	# known possible, or there is no RDMA.
	count(peermem.peermem_absent_dmabuf_only) == 0 with input as dmabuf_host(["nvidia", "nvidia_peermem"], {})
	count(peermem.peermem_absent_dmabuf_only) == 0 with input as dmabuf_host(["nvidia", "nv_peer_mem"], {})
	count(peermem.peermem_absent_dmabuf_only) == 0 with input as dmabuf_host(["nvidia"], {"nvidia_peermem": true})
	count(peermem.peermem_absent_dmabuf_only) == 0 with input as with_libs(dmabuf_host(["nvidia"], {}), {"verbs": [{"version": "33.1"}]})
	count(peermem.peermem_absent_dmabuf_only) == 0 with input as object.union(dmabuf_host(["nvidia"], {}), {"nvidia": {"flavor": ""}})
	count(peermem.peermem_absent_dmabuf_only) == 0 with input as object.union(dmabuf_host(["nvidia"], {}), {"kernel": {"release": ""}})
	count(peermem.peermem_absent_dmabuf_only) == 0 with input as object.union(object.remove(dmabuf_host(["nvidia"], {}), ["rdma"]), {"rdma": {"devices": {}}})
}
