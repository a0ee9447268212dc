package fleetaudit.fleet_rules.sysctl_test

import data.fleetaudit.fleet_rules.sysctl

host(name, running) := {"host": name, "sysctl": {"running": running}}

test_one_host_differs if {
	fleet := {"fleet": "gpu", "hosts": [
		host("a", {"vm.swappiness": "10", "kernel.hostname": "a"}),
		host("b", {"vm.swappiness": "10", "kernel.hostname": "b"}),
		host("c", {"vm.swappiness": "10", "kernel.hostname": "c"}),
		host("d", {"vm.swappiness": "60", "kernel.hostname": "d"}),
	]}
	[f] := [f | some f in sysctl.sysctl_skew with input as fleet]
	f.host == "d"
	f.expected == "10"
	f.evidence == ["sysctl.running.vm.swappiness"]
}

test_uniform_and_ignored_keys_pass if {
	fleet := {"fleet": "gpu", "hosts": [host("a", {"vm.swappiness": "10", "x.y": "1"}), host("b", {"vm.swappiness": "10", "x.y": "2"})]}
	count(sysctl.sysctl_skew) == 0 with input as fleet with data.fleetaudit.params as {"sysctl_skew_ignore": ["x.y"]}
}

test_baseline if {
	fleet := {"fleet": "gpu", "hosts": [host("a", {"vm.swappiness": "10"}), host("b", {"vm.swappiness": "10"})]}
	findings := sysctl.sysctl_skew with input as fleet with data.fleetaudit.params as {"baseline": {"sysctl": {"vm.swappiness": "1"}}}
	{f.host | some f in findings} == {"a", "b"}
}

test_hosts_without_the_key_are_not_compared if {
	fleet := {"fleet": "gpu", "hosts": [
		host("a", {"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host("b", {"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host("c", {"vm.swappiness": "10"}),
		host("d", {"vm.swappiness": "10", "net.core.somaxconn": "128"}),
	]}
	findings := sysctl.sysctl_skew with input as fleet
	[f] := [f | some f in findings]
	f.host == "d"
	f.msg == "net.core.somaxconn 128 differs from the fleet's majority 4096 (2 of 3 hosts)"
}

test_no_consensus_reports_every_host if {
	fleet := {"fleet": "gpu", "hosts": [
		host("a", {"vm.swappiness": "10"}),
		host("b", {"vm.swappiness": "10"}),
		host("c", {"vm.swappiness": "30"}),
		host("d", {"vm.swappiness": "60"}),
	]}
	findings := sysctl.sysctl_skew with input as fleet
	{f.host | some f in findings} == {"a", "b", "c", "d"}
	every f in findings {
		f.basis == "none"
	}
}

test_alike_hosts_share_a_group if {
	fleet := {"fleet": "gpu", "hosts": [
		host("a", {"vm.swappiness": "10", "kernel.hostname": "a"}),
		host("b", {"vm.swappiness": "10", "kernel.hostname": "b"}),
		host("c", {"vm.swappiness": "60", "kernel.hostname": "c"}),
	]}
	count(sysctl.groups) == 2 with input as fleet
}

test_fix_sets_the_majority_value if {
	fleet := {"fleet": "gpu", "hosts": [
		host("a", {"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host("b", {"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host("c", {"vm.swappiness": "10", "net.core.somaxconn": "4096"}),
		host("d", {"vm.swappiness": "60", "net.core.somaxconn": "4096"}),
	]}
	[f] := [f | some f in sysctl.sysctl_skew with input as fleet]
	f.fix == {"kind": "sysctl", "set": {"vm.swappiness": "10"}}
}

# A baseline the profile wrote as a number compares with the running text,
# and the fix sets it as text.
test_fix_sets_the_declared_baseline if {
	fleet := {"fleet": "gpu", "hosts": [host("a", {"vm.swappiness": "10"}), host("b", {"vm.swappiness": "1"})]}
	every baseline in [1, "1"] {
		findings := sysctl.sysctl_skew with input as fleet with data.fleetaudit.params as {"baseline": {"sysctl": {"vm.swappiness": baseline}}}
		[f] := [f | some f in findings]
		f.host == "a"
		f.fix == {"kind": "sysctl", "set": {"vm.swappiness": "1"}}
	}
}

test_no_consensus_has_no_fix if {
	fleet := {"fleet": "gpu", "hosts": [host("a", {"vm.swappiness": "10"}), host("b", {"vm.swappiness": "30"}), host("c", {"vm.swappiness": "60"})]}
	findings := sysctl.sysctl_skew with input as fleet
	count(findings) == 3
	every f in findings {
		not f.fix
	}
}
