package fleetaudit.rules.sysctl_test

import data.fleetaudit.rules.sysctl

host(running, configured) := {"source": {"kind": "local"}, "kernel": {"release": "5.15.0-105-generic"}, "sysctl": {"running": running, "configured": configured}}

test_numa_balancing_on if {
	[f] := [f | some f in sysctl.numa_balancing_enabled with input as host({"kernel.numa_balancing": "1"}, {})]
	f.evidence == ["sysctl.running.kernel.numa_balancing"]
}

test_numa_balancing_off if {
	count(sysctl.numa_balancing_enabled) == 0 with input as host({"kernel.numa_balancing": "0"}, {})
}

test_max_map_count if {
	count(sysctl.max_map_count_low) == 1 with input as host({"vm.max_map_count": "65530"}, {})
	count(sysctl.max_map_count_low) == 0 with input as host({"vm.max_map_count": "262144"}, {})
	count(sysctl.max_map_count_low) == 0 with input as host({"vm.max_map_count": "65530"}, {}) with data.fleetaudit.params as {"max_map_count_min": 65530}
}

test_somaxconn_explicit_only if {
	count(sysctl.somaxconn_low) == 1 with input as host({"net.core.somaxconn": "1024"}, {"net.core.somaxconn": "1024"})
	count(sysctl.somaxconn_low) == 0 with input as host({"net.core.somaxconn": "1024"}, {})
	count(sysctl.somaxconn_low) == 0 with input as host({}, {"net.core.somaxconn": "4096"})
}

test_tcp_tw_recycle_stale_on_new_kernel if {
	[f] := [f | some f in sysctl.tcp_tw_recycle with input as host({}, {"net.ipv4.tcp_tw_recycle": "1"})]
	f.severity == "low"
}

test_tcp_tw_recycle_live_on_old_kernel if {
	h := object.union(host({}, {"net.ipv4.tcp_tw_recycle": "1"}), {"kernel": {"release": "4.4.0-210-generic"}})
	[f] := [f | some f in sysctl.tcp_tw_recycle with input as h]
	f.severity == "high"
}

test_tcp_tw_recycle_off if {
	count(sysctl.tcp_tw_recycle) == 0 with input as host({}, {"net.ipv4.tcp_tw_recycle": "0"})
}

test_not_applied if {
	h := host({"kernel.numa_balancing": "1", "net.ipv4.ip_local_port_range": "32768\t60999"}, {"kernel.numa_balancing": "0", "net.ipv4.ip_local_port_range": "32768 60999"})
	[f] := [f | some f in sysctl.sysctl_not_applied with input as h]
	f.evidence == ["sysctl.configured.kernel.numa_balancing", "sysctl.running.kernel.numa_balancing"]
}

test_not_applied_skips_config_repo_and_missing_keys if {
	h := object.union(host({}, {"kernel.numa_balancing": "0"}), {"source": {"kind": "config-repo"}})
	count(sysctl.sysctl_not_applied) == 0 with input as h
	count(sysctl.sysctl_not_applied) == 0 with input as host({}, {"net.ipv4.tcp_tw_recycle": "1"})
}

test_invalid_missing_key if {
	h := object.union(host({}, {"net.ipv4.tcp_tw_recycle": "1"}), {"sysctl": {"missing": ["net.ipv4.tcp_tw_recycle"]}})
	[f] := [f | some f in sysctl.sysctl_invalid with input as h]
	f.evidence == ["sysctl.configured.net.ipv4.tcp_tw_recycle", "sysctl.missing"]
}

test_invalid_congestion_control if {
	h := host({"net.ipv4.tcp_available_congestion_control": "reno cubic"}, {"net.ipv4.tcp_congestion_control": "bbr"})
	count(sysctl.sysctl_invalid) == 1 with input as h
	h2 := host({"net.ipv4.tcp_available_congestion_control": "reno cubic bbr"}, {"net.ipv4.tcp_congestion_control": "bbr"})
	count(sysctl.sysctl_invalid) == 0 with input as h2
}

test_invalid_congestion_control_finding if {
	h := host({"net.ipv4.tcp_available_congestion_control": "reno\tcubic"}, {"net.ipv4.tcp_congestion_control": "bbr"})
	[f] := [f | some f in sysctl.sysctl_invalid with input as h]
	f.msg == "net.ipv4.tcp_congestion_control = bbr is not among net.ipv4.tcp_available_congestion_control (reno cubic)"
	f.evidence == ["sysctl.configured.net.ipv4.tcp_congestion_control", "sysctl.running.net.ipv4.tcp_available_congestion_control"]
	count(sysctl.sysctl_invalid) == 0 with input as host({}, {"net.ipv4.tcp_congestion_control": "bbr", "net.ipv4.tcp_available_congestion_control": "bbr"})
}

test_numa_balancing_fix if {
	[f] := [f | some f in sysctl.numa_balancing_enabled with input as host({"kernel.numa_balancing": "1"}, {})]
	f.fix == {"kind": "sysctl", "set": {"kernel.numa_balancing": "0"}}
}

# The fix sets the fleet's minimum, a string whatever the profile wrote.
test_max_map_count_fix_is_the_fleet_minimum if {
	h := host({"vm.max_map_count": "65530"}, {})
	[f] := [f | some f in sysctl.max_map_count_low with input as h]
	f.fix == {"kind": "sysctl", "set": {"vm.max_map_count": "262144"}}
	[g] := [g | some g in sysctl.max_map_count_low] with input as h with data.fleetaudit.params as {"max_map_count_min": 1048576}
	g.fix == {"kind": "sysctl", "set": {"vm.max_map_count": "1048576"}}
}

test_somaxconn_fix_is_the_fleet_minimum if {
	h := host({"net.core.somaxconn": "1024"}, {"net.core.somaxconn": "1024"})
	[f] := [f | some f in sysctl.somaxconn_low] with input as h with data.fleetaudit.params as {"somaxconn_min": 8192}
	f.fix == {"kind": "sysctl", "set": {"net.core.somaxconn": "8192"}}
}

test_tcp_tw_recycle_fix_only_where_the_knob_exists if {
	old := object.union(host({}, {"net.ipv4.tcp_tw_recycle": "1"}), {"kernel": {"release": "4.4.0-210-generic"}})
	[f] := [f | some f in sysctl.tcp_tw_recycle with input as old]
	f.fix == {"kind": "sysctl", "set": {"net.ipv4.tcp_tw_recycle": "0"}}

	# Linux 4.12 removed it: only deleting the line helps, no drop-in does.
	[g] := [g | some g in sysctl.tcp_tw_recycle with input as host({}, {"net.ipv4.tcp_tw_recycle": "1"})]
	not g.fix
}

# An offline image: the kernel it boots decides, and is cited.
test_tcp_tw_recycle_on_an_image_boot_kernel if {
	h := {"source": {"kind": "local", "image": true}, "kernel": {"boot_release": "4.9.0-19-amd64"}, "sysctl": {"configured": {"net.ipv4.tcp_tw_recycle": "1"}}}
	[f] := [f | some f in sysctl.tcp_tw_recycle with input as h]
	f.severity == "high"
	f.evidence == ["sysctl.configured.net.ipv4.tcp_tw_recycle", "kernel.boot_release"]
}

# Whitespace runs, tabs and edges compare equal; other characters do not.
test_not_applied_normalizes_spaces_and_tabs_only if {
	h := host(
		{"a": "4096\t87380\t6291456", "b": "1", "c": "x\ty", "d": "1 2", "e": "1 2", "f": "1\t2"},
		{"a": " 4096  87380 \t6291456 ", "b": "1\n", "c": "x\u00a0y", "d": "1 3", "e": "1\t2", "f": "1 2"},
	)
	keys := {f.evidence[0] | some f in sysctl.sysctl_not_applied} with input as h
	keys == {"sysctl.configured.b", "sysctl.configured.c", "sysctl.configured.d"}
}

# normalized agrees with splitting into words at spaces and tabs.
words(v) := concat(" ", [w | some w in split(replace(v, "\t", " "), " "); w != ""])

test_normalized_is_words_joined_by_one_space if {
	every v in ["", " ", "\t\t", "a", " a", "a ", "a  b", "a\t \tb", " \ta \t b\t ", "a\nb", "a\u00a0b", "4 4\t1  7"] {
		sysctl.normalized(v) == words(v)
	}
}
