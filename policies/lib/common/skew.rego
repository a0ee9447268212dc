# Fleet-wide skew: which value hosts of one fleet are expected to share, and
# how that expectation was chosen.
#
# Fleet rules see each distinct configuration of a fleet once:
#   input.fleet            the fleet's name
#   input.count            how many hosts of the fleet were read
#   input.groups[i]        the hosts that share every fact the fleet's rules
#                          read: "group" (i), "count" (how many hosts), their
#                          labels, errors and the facts rules declare (a
#                          built-in rule's groups split the hosts by its own
#                          facts only: weigh groups by "count", never by how
#                          many there are)
# A rule maps groups to values ({group: value}, leaving out groups without
# the fact) and names a group in each finding; the engine reports the
# finding for every host of that group, so the work grows with the
# configurations, not with the hosts.
package fleetaudit.lib.skew

# Share of a fleet's hosts (percent) that one value needs to be the majority.
threshold := 60

# hosts_in[g] is how many hosts group g holds.
hosts_in := {g.group: g.count | some g in input.groups}

# expected says which value the hosts should share. values maps a group to
# the value its hosts hold; baseline is the profile's declared value, or null.
#   {"basis": "baseline", "value": v}                       declared by the profile
#   {"basis": "majority", "value": v, "hosts": n, "of": t}  held by >= threshold% of the t hosts with a value
#   {"basis": "none", "distribution": {v: n}, "of": t}      no consensus
# When some of the fleet's hosts have no value, "fleet" is the fleet's size.
expected(_, baseline) := {"basis": "baseline", "value": baseline} if baseline != null

expected(values, null) := expected_from(distribution(values), null)

# expected_from is expected for hosts already counted as {value: hosts}.
expected_from(dist, baseline) := in_fleet(from_distribution(dist, baseline))

# from_distribution is the expectation for any voters counted as {value:
# voters} (one job's worker pods), without the fleet's size.
from_distribution(_, baseline) := {"basis": "baseline", "value": baseline} if baseline != null

from_distribution(dist, null) := {"basis": "majority", "value": v, "hosts": n, "of": total} if {
	total := sum([n | some n in dist])
	some v, n in dist
	n * 100 >= total * threshold
} else := {"basis": "none", "distribution": dist, "of": sum([n | some n in dist])}

in_fleet(exp) := object.union(exp, {"fleet": input.count}) if {
	exp.basis != "baseline"
	input.count > exp.of
} else := exp

# distribution counts the hosts holding each distinct value of a
# {group: value} map: one pass per distinct value over the groups.
distribution(values) := {v: sum([hosts_in[g] | some g, x in values; x == v]) | some v in {y | some y in values}}

# votes counts the keys holding each distinct value of a {key: value} map,
# one vote each (the worker pods of a job).
votes(values) := {v: count([1 | some x in values; x == v]) | some v in {y | some y in values}}

# finding is the finding for one group given the fleet's expectation, and
# is undefined when the group holds the expected value. what names the
# fact in messages ("NCCL"); evidence lists the fact paths the finding
# cites.
finding(group, value, exp, what, evidence) := {
	"group": group,
	"msg": sprintf("%s %s differs from the fleet's %s", [what, value, describe_expected(exp)]),
	"evidence": evidence,
	"expected": exp.value,
	"basis": exp.basis,
} if {
	exp.basis != "none"
	value != exp.value
}

finding(group, value, exp, what, evidence) := {
	"group": group,
	"msg": sprintf("no consensus on %s across the fleet: this host has %s; %s", [what, value, describe_distribution(exp)]),
	"evidence": evidence,
	"basis": "none",
} if {
	exp.basis == "none"
}

describe_expected(exp) := sprintf("declared baseline %s", [exp.value]) if exp.basis == "baseline"

describe_expected(exp) := sprintf("majority %s (%s)", [exp.value, share(exp)]) if exp.basis == "majority"

# share says how many hosts hold the majority, of how many that report the
# fact, and the fleet's size when some do not.
share(exp) := sprintf("%d of %d hosts", [exp.hosts, exp.of]) if not exp.fleet

share(exp) := sprintf("%d of the %d hosts that report it; %d in the fleet", [exp.hosts, exp.of, exp.fleet]) if exp.fleet

describe_distribution(exp) := sprintf("%s (a majority needs %d%% of hosts)", [spread(exp), threshold]) if not exp.fleet

describe_distribution(exp) := sprintf("%s (%d of the fleet's %d hosts report it; a majority needs %d%% of them)", [spread(exp), exp.of, exp.fleet, threshold]) if exp.fleet

spread(exp) := concat(", ", [sprintf("%s on %d of %d", [v, n, exp.of]) | some v, n in exp.distribution])

# fleet_input is a fleet rule's input made of groups (projections, each
# with an optional "count", 1 by default), numbered in order: for tests.
fleet_input(groups) := {
	"fleet": "test",
	"count": sum([object.get(g, "count", 1) | some g in groups]),
	"groups": [object.union(g, {"group": i, "count": object.get(g, "count", 1)}) | some i, g in groups],
}
