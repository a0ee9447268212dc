# Version strings as fleets report them ("550.90.07", "2.18.3", "5.15.0-105-generic").
package fleetaudit.lib.version

# parse turns the dotted numbers of a version, before any "-" or "+"
# suffix, into a list of numbers, so versions compare with < as Rego
# compares arrays: element by element. It is undefined unless every part is
# a number. units.parse reads zero-padded parts ("07"), which to_number
# refuses; few builtin calls, as this runs for every host.
parse(v) := [units.parse(p) | some p in split(core, ".")] if {
	core := split(split(v, "-")[0], "+")[0]
	regex.match(`^[0-9]+(\.[0-9]+)*$`, core)
}

# less is true when version a is older than version b.
less(a, b) if parse(a) < parse(b)

# major is the first number of a version: the NVIDIA driver branch ("550").
major(v) := parse(v)[0]
