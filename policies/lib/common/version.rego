# Version strings as fleets report them ("550.90.07", "2.18.3", "5.15.0-105-generic").
package fleetaudit.lib.version

# parse turns the leading dotted numbers of a version into a list of numbers,
# so versions compare with < as Rego compares arrays: element by element.
# Zero-padded parts ("07") compare as numbers; to_number refuses leading zeros.
parse(v) := [to_number(regex.replace(p, `^0+([0-9])`, "$1")) | some p in split(leading, ".")] if {
	leading := regex.find_n(`^[0-9]+(\.[0-9]+)*`, v, 1)[0]
}

# less is true when version a is older than version b.
less(a, b) if parse(a) < parse(b)

# major is the first number of a version: the NVIDIA driver branch ("550").
major(v) := parse(v)[0]
