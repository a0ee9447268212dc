package fleetaudit.fleet_rules.sysctl_test

import data.fleetaudit.fleet_rules.sysctl
import data.fleetaudit.lib.skew

host(running) := {"sysctl": {"running": running}}

test_one_host_differs if {
	fleet := skew.fleet_input([
		host({"vm.swappiness": "10", "kernel.hostname": "a"}),
		host({"vm.swappiness": "10", "kernel.hostname": "b"}),
		host({"vm.swappiness": "10", "kernel.hostname": "c"}),
		host({"vm.swappiness": "60", "kernel.hostname": "d"}),
	])
	[f] := [f | some f in sysctl.sysctl_skew with input as fleet]
	f.group == 3
	f.expected == "10"
	f.evidence == ["sysctl.running.vm.swappiness"]
}

test_uniform_and_ignored_keys_pass if {
	fleet := skew.fleet_input([host({"vm.swappiness": "10", "x.y": "1"}), host({"vm.swappiness": "10", "x.y": "2"})])
	count(sysctl.sysctl_skew) == 0 with input as fleet with data.fleetaudit.params as {"sysctl_skew_ignore": ["x.y"]}
}

test_baseline if {
	fleet := skew.fleet_input([host({"vm.swappiness": "10"}), host({"vm.swappiness": "10"})])
	findings := sysctl.sysctl_skew with input as fleet with data.fleetaudit.params as {"baseline": {"sysctl": {"vm.swappiness": "1"}}}
	{f.group | some f in findings} == {0, 1}
}

test_hosts_without_the_key_are_not_compared if {
	fleet := skew.fleet_input([
		host({"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host({"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host({"vm.swappiness": "10"}),
		host({"vm.swappiness": "10", "net.core.somaxconn": "128"}),
	])
	findings := sysctl.sysctl_skew with input as fleet
	[f] := [f | some f in findings]
	f.group == 3
	f.msg == "net.core.somaxconn 128 differs from the fleet's majority 4096 (2 of the 3 hosts that report it; 4 in the fleet)"
}

test_no_consensus_reports_every_host if {
	fleet := skew.fleet_input([
		host({"vm.swappiness": "10"}),
		host({"vm.swappiness": "10"}),
		host({"vm.swappiness": "30"}),
		host({"vm.swappiness": "60"}),
	])
	findings := sysctl.sysctl_skew with input as fleet
	{f.group | some f in findings} == {0, 1, 2, 3}
	every f in findings {
		f.basis == "none"
	}
}

# Groups that run the same sysctls are compared once, weighing their hosts.
test_alike_groups_share_a_map if {
	fleet := skew.fleet_input([
		host({"vm.swappiness": "10", "kernel.hostname": "a"}),
		host({"vm.swappiness": "10", "kernel.hostname": "b"}),
		host({"vm.swappiness": "60", "kernel.hostname": "c"}),
	])
	count(sysctl.configs) == 2 with input as fleet
}

test_groups_weigh_by_their_hosts if {
	fleet := skew.fleet_input([
		object.union(host({"vm.swappiness": "60"}), {"count": 4}),
		host({"vm.swappiness": "10"}),
		host({"vm.swappiness": "10"}),
	])
	findings := sysctl.sysctl_skew with input as fleet
	{f.group | some f in findings} == {1, 2}
	every f in findings {
		f.msg == "vm.swappiness 10 differs from the fleet's majority 60 (4 of 6 hosts)"
	}
}

test_fix_sets_the_majority_value if {
	fleet := skew.fleet_input([
		host({"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host({"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host({"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host({"vm.swappiness": "60", "net.core.somaxconn": "4096"}),
	])
	[f] := [f | some f in sysctl.sysctl_skew with input as fleet]
	f.fix == {"kind": "sysctl", "set": {"vm.swappiness": "10"}}
}

# A baseline the profile wrote as a number compares with the running text,
# and the fix sets it as text.
test_fix_sets_the_declared_baseline if {
	fleet := skew.fleet_input([host({"vm.swappiness": "10"}), host({"vm.swappiness": "1"})])
	every baseline in [1, "1"] {
		findings := sysctl.sysctl_skew with input as fleet with data.fleetaudit.params as {"baseline": {"sysctl": {"vm.swappiness": baseline}}}
		[f] := [f | some f in findings]
		f.group == 0
		f.fix == {"kind": "sysctl", "set": {"vm.swappiness": "1"}}
	}
}

test_no_consensus_has_no_fix if {
	fleet := skew.fleet_input([host({"vm.swappiness": "10"}), host({"vm.swappiness": "30"}), host({"vm.swappiness": "60"})])
	findings := sysctl.sysctl_skew with input as fleet
	count(findings) == 3
	every f in findings {
		not f.fix
	}
}
