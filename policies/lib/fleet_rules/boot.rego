# Boot command-line drift across the hosts of one fleet.
package fleetaudit.fleet_rules.boot

import data.fleetaudit.lib.skew

# Params every host sets differently (or that the boot loader adds per
# boot) never count as drift.
per_host_params := {"BOOT_IMAGE", "root", "initrd", "resume", "ro", "rw"}

ignored := per_host_params | {p | some p in data.fleetaudit.params.boot_cmdline_skew_ignore}

# A group's running params as one comparable value: name=value sorted.
cmdline_values := {g.group: concat(" ", sort(params)) |
	some g in input.groups
	g.boot.running.present
	params := [param(name, value) |
		some name, value in g.boot.running.params
		not name in ignored
	]
}

param(name, "") := name

param(name, value) := sprintf("%s=%s", [name, value]) if value != ""

default cmdline_baseline := null

cmdline_baseline := concat(" ", sort(data.fleetaudit.params.baseline.boot_params))

cmdline_expected := skew.expected(cmdline_values, cmdline_baseline)

# METADATA
# title: Boot parameters differ across the fleet
# description: >-
#   The set of kernel parameters a host booted with (ignoring per-host ones:
#   BOOT_IMAGE, root, initrd, resume, ro/rw and the profile's
#   boot_cmdline_skew_ignore) differs from the fleet's declared baseline
#   (param baseline.boot_params) or, without one, from the set held by at
#   least 60% of the fleet's hosts. Hosts of one fleet booted differently
#   behave differently under the same job: a parameter one host lacks is
#   often a configuration layer that did not reach it.
# related_resources:
# - ref: https://docs.kernel.org/admin-guide/kernel-parameters.html
#   description: kernel command-line parameters
# custom:
#   id: boot-cmdline-skew
#   severity: medium
#   profiles: [gpu-training]
#   remediation: >-
#     Bring the deviating host's boot configuration to the fleet's and reboot
#     it, or list the parameter in the profile's boot_cmdline_skew_ignore when
#     it is meant to differ per host.
#   facts:
#   - boot.running.present
#   - boot.running.params
boot_cmdline_skew contains f if {
	some group, v in cmdline_values
	f := skew.finding(group, v, cmdline_expected, "boot parameters", ["boot.running.params"])
}
