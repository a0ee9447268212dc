package fleetaudit.rules.services_test

import data.fleetaudit.rules.services

unit(u) := {"services": {"units": {"slurmd.service": object.union({"file": "/usr/lib/systemd/system/slurmd.service", "drop_ins": []}, u)}}}

lim(soft, hard) := {"soft": soft, "hard": hard}

test_running_process_wins if {
	# Configured unlimited, but the daemon still runs with 64 MiB: not restarted.
	h := unit({"memlock": lim("unlimited", "unlimited"), "running_pid": 2211, "running_memlock": lim("65536", "65536")})
	[f] := [f | some f in services.service_memlock_too_low with input as h]
	f.msg == "slurmd.service starts jobs, and its running process (PID 2211) has memlock 65536 KiB, below the fleet's minimum unlimited"
	f.evidence == ["services.units.slurmd.service.running_memlock"]

	# Running unlimited: the configuration is not what jobs get.
	count(services.service_memlock_too_low) == 0 with input as unit({"memlock": lim("65536", "65536"), "running_pid": 2211, "running_memlock": lim("unlimited", "unlimited")})
}

test_configured_limit if {
	[f] := [f | some f in services.service_memlock_too_low with input as unit({"memlock": lim("8192", "unlimited")})]
	f.evidence == ["services.units.slurmd.service.memlock"]
	contains(f.msg, "configured with memlock soft 8192, hard unlimited (KiB)")
	count(services.service_memlock_too_low) == 0 with input as unit({"memlock": lim("unlimited", "unlimited")})
}

# The param: a number of KiB; at the minimum is fine.
test_minimum_param if {
	h := unit({"memlock": lim("8388608", "8388608")})
	count(services.service_memlock_too_low) == 0 with input as h with data.fleetaudit.params as {"memlock_min_kb": 8388608}
	count(services.service_memlock_too_low) == 1 with input as h with data.fleetaudit.params as {"memlock_min_kb": 8388609}
	count(services.service_memlock_too_low) == 1 with input as h
}

# systemd's default is at most 8192 KiB: too low against more than that only.
test_systemd_default if {
	h := unit({"memlock_default": true})
	[f] := [f | some f in services.service_memlock_too_low with input as h]
	f.evidence == ["services.units.slurmd.service.memlock_default"]
	count(services.service_memlock_too_low) == 1 with input as h with data.fleetaudit.params as {"memlock_min_kb": 8193}
	count(services.service_memlock_too_low) == 0 with input as h with data.fleetaudit.params as {"memlock_min_kb": 8192}
}

test_masked_or_absent_units_pass if {
	count(services.service_memlock_too_low) == 0 with input as unit({"masked": true, "memlock_default": true})
	count(services.service_memlock_too_low) == 0 with input as {"services": {"units": {}}}
}

# The fix: a drop-in with LimitMEMLOCK=infinity for the unit, where the
# configuration is what is low; none where a restart would do.
test_fix_where_the_configuration_is_low if {
	want := {"kind": "service-limits", "unit": "slurmd.service", "set": {"LimitMEMLOCK": "infinity"}}
	[a] := [f | some f in services.service_memlock_too_low with input as unit({"memlock": lim("65536", "65536")})]
	a.fix == want
	[b] := [f | some f in services.service_memlock_too_low with input as unit({"memlock_default": true})]
	b.fix == want

	# Running low with the configuration low too: the drop-in, then a restart.
	[c] := [f | some f in services.service_memlock_too_low with input as unit({"memlock": lim("65536", "65536"), "running_pid": 7, "running_memlock": lim("65536", "65536")})]
	c.fix == want

	# Running low, configured unlimited: a restart, no fix.
	[d] := [f | some f in services.service_memlock_too_low with input as unit({"memlock": lim("unlimited", "unlimited"), "running_pid": 7, "running_memlock": lim("65536", "65536")})]
	not d.fix

	# A daemon with no unit file: nothing to put a drop-in beside.
	[e] := [f | some f in services.service_memlock_too_low with input as {"services": {"units": {"slurmd.service": {"drop_ins": [], "running_pid": 7, "running_memlock": lim("64", "64")}}}}]
	not e.fix
}
