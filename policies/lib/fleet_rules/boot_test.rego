package fleetaudit.fleet_rules.boot_test

import data.fleetaudit.fleet_rules.boot

host(name, params) := {"host": name, "boot": {"running": {"present": true, "params": params}}}

base := {"BOOT_IMAGE": "/boot/vmlinuz-5.15.0-105-generic", "root": "UUID=x", "ro": "", "iommu": "pt"}

test_host_missing_a_param_deviates if {
	fleet := {"fleet": "gpu", "hosts": [
		host("a", object.union(base, {"hugetlb_cma": "0"})),
		host("b", object.union(base, {"hugetlb_cma": "0"})),
		host("c", object.union(base, {"hugetlb_cma": "0", "root": "UUID=y"})),
		host("d", base),
	]}
	[f] := [f | some f in boot.boot_cmdline_skew with input as fleet]
	f.host == "d"
	f.basis == "majority"
	f.expected == "hugetlb_cma=0 iommu=pt"
}

test_per_host_params_do_not_count if {
	fleet := {"fleet": "gpu", "hosts": [
		host("a", base),
		host("b", object.union(base, {"BOOT_IMAGE": "/boot/vmlinuz-6.8", "root": "UUID=z", "initrd": "/x"})),
	]}
	count(boot.boot_cmdline_skew) == 0 with input as fleet
}

test_profile_ignore_list if {
	fleet := {"fleet": "gpu", "hosts": [host("a", object.union(base, {"console": "ttyS0"})), host("b", base)]}
	count(boot.boot_cmdline_skew) == 0 with input as fleet with data.fleetaudit.params as {"boot_cmdline_skew_ignore": ["console"]}
}

test_baseline_wins_over_majority if {
	fleet := {"fleet": "gpu", "hosts": [host("a", base), host("b", base), host("c", object.union(base, {"hugetlb_cma": "0"}))]}
	findings := boot.boot_cmdline_skew with input as fleet with data.fleetaudit.params as {"baseline": {"boot_params": ["iommu=pt", "hugetlb_cma=0"]}}
	{f.host | some f in findings} == {"a", "b"}
}

test_hosts_without_running_cmdline_do_not_vote if {
	fleet := {"fleet": "gpu", "hosts": [host("a", base), host("b", base), {"host": "repo", "boot": {"running": {"present": false, "params": {}}}}]}
	count(boot.boot_cmdline_skew) == 0 with input as fleet
}
