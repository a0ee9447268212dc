package fleetaudit.fleet_rules.boot_test

import data.fleetaudit.fleet_rules.boot
import data.fleetaudit.lib.skew

running(params) := {"boot": {"running": {"present": true, "params": params}}}

base := {"BOOT_IMAGE": "/boot/vmlinuz-5.15.0-105-generic", "root": "UUID=x", "ro": "", "iommu": "pt"}

test_host_missing_a_param_deviates if {
	fleet := skew.fleet_input([
		running(object.union(base, {"hugetlb_cma": "0"})),
		running(object.union(base, {"hugetlb_cma": "0"})),
		running(object.union(base, {"hugetlb_cma": "0", "root": "UUID=y"})),
		running(base),
	])
	[f] := [f | some f in boot.boot_cmdline_skew with input as fleet]
	f.group == 3
	f.basis == "majority"
	f.expected == "hugetlb_cma=0 iommu=pt"
}

# Groups weigh by their hosts: one group of three outvotes two of one.
test_group_of_many_hosts_is_the_majority if {
	fleet := skew.fleet_input([
		object.union(running(base), {"count": 3}),
		running(object.union(base, {"hugetlb_cma": "0"})),
		running(object.union(base, {"hugetlb_cma": "0"})),
	])
	findings := boot.boot_cmdline_skew with input as fleet
	{f.group | some f in findings} == {1, 2}
	every f in findings {
		f.msg == "boot parameters hugetlb_cma=0 iommu=pt differs from the fleet's majority iommu=pt (3 of 5 hosts)"
	}
}

test_per_host_params_do_not_count if {
	fleet := skew.fleet_input([
		running(base),
		running(object.union(base, {"BOOT_IMAGE": "/boot/vmlinuz-6.8", "root": "UUID=z", "initrd": "/x"})),
	])
	count(boot.boot_cmdline_skew) == 0 with input as fleet
}

test_profile_ignore_list if {
	fleet := skew.fleet_input([running(object.union(base, {"console": "ttyS0"})), running(base)])
	count(boot.boot_cmdline_skew) == 0 with input as fleet with data.fleetaudit.params as {"boot_cmdline_skew_ignore": ["console"]}
}

test_baseline_wins_over_majority if {
	fleet := skew.fleet_input([running(base), running(base), running(object.union(base, {"hugetlb_cma": "0"}))])
	findings := boot.boot_cmdline_skew with input as fleet with data.fleetaudit.params as {"baseline": {"boot_params": ["iommu=pt", "hugetlb_cma=0"]}}
	{f.group | some f in findings} == {0, 1}
}

test_hosts_without_running_cmdline_do_not_vote if {
	fleet := skew.fleet_input([running(base), running(base), {"boot": {"running": {"present": false, "params": {}}}}])
	count(boot.boot_cmdline_skew) == 0 with input as fleet
}
