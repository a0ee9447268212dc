package fleetaudit.rules.limits_test

import data.fleetaudit.rules.limits

host(effective, kernel) := {"limits": {"effective": effective}, "kernel": {"release": kernel}}

test_unlimited_passes if {
	h := host({"*": {"memlock": {"soft": "unlimited", "hard": "unlimited"}}}, "5.15.0-105-generic")
	count(limits.memlock_too_low) == 0 with input as h
}

test_numeric_below_unlimited_minimum if {
	h := host({"*": {"memlock": {"soft": "65536", "hard": "65536"}}}, "6.8.0-45-generic")
	findings := limits.memlock_too_low with input as h
	{f.evidence[0] | some f in findings} == {"limits.effective.*.memlock.soft", "limits.effective.*.memlock.hard"}
}

test_unset_is_the_kernel_default if {
	h := host({"*": {}}, "5.15.0-105-generic")
	findings := limits.memlock_too_low with input as h
	some f in findings
	f.msg == "memlock soft limit for * is unset (kernel default 64 KiB), below the fleet's minimum unlimited"
}

test_numeric_minimum if {
	h := host({"*": {"memlock": {"soft": "65536", "hard": "unlimited"}}}, "6.8.0-45-generic")
	count(limits.memlock_too_low) == 0 with input as h with data.fleetaudit.params as {"memlock_min_kb": "32768"}
	[f] := [f | some f in limits.memlock_too_low] with input as h with data.fleetaudit.params as {"memlock_min_kb": "1048576"}
	f.evidence == ["limits.effective.*.memlock.soft"]
}

test_job_user_domain if {
	h := host({"*": {"memlock": {"soft": "unlimited", "hard": "unlimited"}}, "trainer": {"memlock": {"soft": "8192", "hard": "unlimited"}}}, "6.8.0")
	[f] := [f | some f in limits.memlock_too_low] with input as h with data.fleetaudit.params as {"job_user": "trainer"}
	f.evidence == ["limits.effective.trainer.memlock.soft"]
}

test_nofile_low if {
	h := host({"*": {"nofile": {"soft": "1024", "hard": "4096"}}}, "6.8.0")
	[f] := [f | some f in limits.nofile_too_low with input as h]
	f.msg == "hard nofile limit for * is 4096, below 65536"
}

test_nofile_high_or_unset_passes if {
	count(limits.nofile_too_low) == 0 with input as host({"*": {"nofile": {"soft": "1048576", "hard": "1048576"}}}, "6.8.0")
	count(limits.nofile_too_low) == 0 with input as host({"*": {}}, "6.8.0")
}

test_stack_unlimited_with_old_nccl if {
	h := object.union(host({"*": {}, "trainer": {"stack": {"soft": "unlimited", "hard": "unlimited"}}}, "6.8.0"), {"libraries": {"nccl": [{"version": "2.21.5"}]}})
	[f] := [f | some f in limits.stack_unlimited with input as h]
	f.evidence == ["limits.effective.trainer.stack.soft", "libraries.nccl"]
}

test_stack_finite_or_new_nccl if {
	h := object.union(host({"*": {"stack": {"soft": "8192", "hard": "unlimited"}}}, "6.8.0"), {"libraries": {"nccl": [{"version": "2.21.5"}]}})
	count(limits.stack_unlimited) == 0 with input as h
	h2 := object.union(host({"*": {"stack": {"soft": "unlimited", "hard": "unlimited"}}}, "6.8.0"), {"libraries": {"nccl": [{"version": "2.30.4"}]}})
	count(limits.stack_unlimited) == 0 with input as h2
}

test_memlock_fix_per_domain_and_type if {
	h := host({"*": {"memlock": {"soft": "65536", "hard": "unlimited"}}, "trainer": {"memlock": {"soft": "unlimited", "hard": "8192"}}}, "6.8.0")
	findings := limits.memlock_too_low with input as h with data.fleetaudit.params as {"job_user": "trainer"}
	{f.fix | some f in findings} == {
		{"kind": "limits", "set": {"domain": "*", "type": "soft", "item": "memlock", "value": "unlimited"}},
		{"kind": "limits", "set": {"domain": "trainer", "type": "hard", "item": "memlock", "value": "unlimited"}},
	}
}

# A profile may write memlock_min_kb as a number; a fix's values are strings.
test_memlock_fix_value_is_the_fleet_minimum_as_text if {
	h := host({"*": {"memlock": {"soft": "65536", "hard": "unlimited"}}}, "6.8.0")
	[f] := [f | some f in limits.memlock_too_low] with input as h with data.fleetaudit.params as {"memlock_min_kb": 67108864}
	f.fix == {"kind": "limits", "set": {"domain": "*", "type": "soft", "item": "memlock", "value": "67108864"}}
	[g] := [g | some g in limits.memlock_too_low] with input as h with data.fleetaudit.params as {"memlock_min_kb": "1048576"}
	g.fix.set.value == "1048576"
	f.msg == "memlock soft limit for * is 65536, below the fleet's minimum 67108864"
	g.msg == "memlock soft limit for * is 65536, below the fleet's minimum 1048576"
}

test_nofile_fix_raises_the_hard_limit if {
	h := host({"*": {"nofile": {"soft": "1024", "hard": "4096"}}}, "6.8.0")
	[f] := [f | some f in limits.nofile_too_low with input as h]
	f.fix == {"kind": "limits", "set": {"domain": "*", "type": "hard", "item": "nofile", "value": "65536"}}
	[g] := [g | some g in limits.nofile_too_low] with input as h with data.fleetaudit.params as {"nofile_min": 1048576}
	g.fix.set.value == "1048576"
}

test_stack_fix_sets_a_finite_soft_limit_for_that_domain if {
	h := object.union(host({"*": {}, "@hpc": {"stack": {"soft": "unlimited", "hard": "unlimited"}}}, "6.8.0"), {"libraries": {"nccl": [{"version": "2.21.5"}]}})
	[f] := [f | some f in limits.stack_unlimited with input as h]
	f.fix == {"kind": "limits", "set": {"domain": "@hpc", "type": "soft", "item": "stack", "value": "8192"}}
}

# An offline image runs no kernel: the default is that of the one it boots.
test_unset_on_an_image_is_the_boot_kernels_default if {
	h := {"source": {"image": true}, "limits": {"effective": {"*": {}}}, "kernel": {"installed": ["5.10.0-28-amd64", "6.1.0-18-amd64"], "boot_release": "6.1.0-18-amd64"}}
	count(limits.memlock_too_low) == 0 with input as h with data.fleetaudit.params as {"memlock_min_kb": 8192}
	some f in limits.memlock_too_low with input as h
	f.msg == "memlock soft limit for * is unset (kernel default 8192 KiB), below the fleet's minimum unlimited"
}

# "-1" is unlimited, as limits.conf(5) reads it; "unlimited" is never
# below, whatever the minimum.
test_memlock_unlimited_spellings if {
	h := host({"*": {"memlock": {"soft": "-1", "hard": "-1"}}}, "6.8.0")
	count(limits.memlock_too_low) == 0 with input as h
	count(limits.memlock_too_low) == 0 with input as h with data.fleetaudit.params as {"memlock_min_kb": 8192}
	u := host({"*": {"memlock": {"soft": "unlimited", "hard": "unlimited"}}}, "6.8.0")
	count(limits.memlock_too_low) == 0 with input as u with data.fleetaudit.params as {"memlock_min_kb": 8192}
}

# memlock_kb agrees with its first form, three definitions.
kb_first_form(v) := -1 if v == "unlimited"

kb_first_form(v) := to_number(v) if {
	v != "unlimited"
	v != ""
}

kb_first_form("") := limits.kernel_default_kb

test_memlock_kb_as_first_form if {
	every v in ["unlimited", "", "0", "-1", "64", "65536", "8388608"] {
		every kernel in ["5.15.0-105-generic", "6.8.0"] {
			limits.memlock_kb(v) == kb_first_form(v) with input as host({}, kernel)
		}
	}
}
