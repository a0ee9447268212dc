package fleetaudit.fleet_rules.versions_test

import data.fleetaudit.fleet_rules.versions
import data.fleetaudit.lib.skew

nccl_host(versions) := {"libraries": {"nccl": [{"version": v, "path": "/x", "kind": "system"} | some v in versions]}}

driver_host(v) := {"nvidia": {"driver_version": v}}

test_nccl_majority if {
	fleet := skew.fleet_input([
		nccl_host(["2.20.5"]), nccl_host(["2.20.5"]),
		nccl_host(["2.20.5"]), nccl_host(["2.18.3", "2.20.5"]),
		nccl_host([]),
	])
	[f] := [f | some f in versions.nccl_version_skew with input as fleet]
	f.group == 3
	f.expected == "2.20.5"
	f.basis == "majority"
	f.evidence == ["libraries.nccl"]
	f.msg == "NCCL 2.18.3,2.20.5 differs from the fleet's majority 2.20.5 (3 of the 4 hosts that report it; 5 in the fleet)"
}

test_nccl_baseline_list if {
	fleet := skew.fleet_input([nccl_host(["2.20.5"]), nccl_host(["2.20.5", "2.18.3"])])
	[f] := [f | some f in versions.nccl_version_skew with input as fleet with data.fleetaudit.params as {"baseline": {"nccl_version": ["2.20.5", "2.18.3"]}}]
	f.group == 0
	f.expected == "2.18.3,2.20.5"
	f.basis == "baseline"
}

test_nccl_uniform_fleet_passes if {
	fleet := skew.fleet_input([nccl_host(["2.20.5"]), nccl_host(["2.20.5"])])
	count(versions.nccl_version_skew) == 0 with input as fleet
}

test_nccl_no_consensus_reports_every_host if {
	fleet := skew.fleet_input([nccl_host(["2.20.5"]), nccl_host(["2.18.3"])])
	findings := versions.nccl_version_skew with input as fleet
	{f.group | some f in findings} == {0, 1}
	every f in findings {
		f.basis == "none"
	}
}

test_driver_branch_differs_is_high if {
	fleet := skew.fleet_input([
		driver_host("550.90.07"), driver_host("550.90.07"),
		driver_host("550.90.07"), driver_host("535.104.05"),
	])
	[f] := [f | some f in versions.driver_version_skew with input as fleet]
	f.group == 3
	f.severity == "high"
	f.expected == "550.90.07"
}

test_driver_patch_differs_is_medium if {
	fleet := skew.fleet_input([
		driver_host("550.90.07"), driver_host("550.90.07"),
		driver_host("550.54.14"),
	])
	[f] := [f | some f in versions.driver_version_skew with input as fleet]
	f.group == 2
	f.severity == "medium"
}

test_driver_baseline if {
	fleet := skew.fleet_input([driver_host("550.90.07"), driver_host("550.90.07")])
	findings := versions.driver_version_skew with input as fleet with data.fleetaudit.params as {"baseline": {"driver_version": "550.127.05"}}
	{f.group | some f in findings} == {0, 1}
	every f in findings {
		f.severity == "medium"
		f.basis == "baseline"
	}
}

test_driver_no_consensus_across_branches_is_high if {
	fleet := skew.fleet_input([driver_host("550.90.07"), driver_host("535.104.05")])
	findings := versions.driver_version_skew with input as fleet
	count(findings) == 2
	every f in findings {
		f.severity == "high"
		f.basis == "none"
	}
}

test_driver_no_consensus_within_branch_is_medium if {
	fleet := skew.fleet_input([driver_host("550.90.07"), driver_host("550.54.14")])
	findings := versions.driver_version_skew with input as fleet
	count(findings) == 2
	every f in findings {
		f.severity == "medium"
	}
}

test_unknown_nccl_versions_do_not_vote if {
	fleet := skew.fleet_input([
		nccl_host(["2.20.5"]), nccl_host(["2.20.5", "unknown"]),
		nccl_host(["unknown"]),
	])
	count(versions.nccl_version_skew) == 0 with input as fleet
}

test_hosts_without_driver_do_not_vote if {
	fleet := skew.fleet_input([driver_host("550.90.07"), {"nvidia": {"driver_version": ""}}, {}, driver_host("unknown")])
	count(versions.driver_version_skew) == 0 with input as fleet
}

kernel_host(v) := {"kernel": {"release": v}}

test_kernel_majority if {
	fleet := skew.fleet_input([
		kernel_host("5.15.0-105-generic"), kernel_host("5.15.0-105-generic"),
		kernel_host("5.15.0-105-generic"), kernel_host("5.15.0-107-generic"),
	])
	[f] := [f | some f in versions.kernel_version_skew with input as fleet]
	f.group == 3
	f.expected == "5.15.0-105-generic"
	f.evidence == ["kernel.release"]
}

test_kernel_uniform_passes if {
	fleet := skew.fleet_input([kernel_host("6.8.0-45-generic"), kernel_host("6.8.0-45-generic")])
	count(versions.kernel_version_skew) == 0 with input as fleet
}

test_kernel_baseline if {
	fleet := skew.fleet_input([kernel_host("6.8.0-45-generic"), kernel_host("6.8.0-47-generic")])
	[f] := [f | some f in versions.kernel_version_skew with input as fleet with data.fleetaudit.params as {"baseline": {"kernel_release": "6.8.0-47-generic"}}]
	f.group == 0
	f.basis == "baseline"
}
