# Fleet-wide skew: which value hosts of one fleet are expected to share, and
# how that expectation was chosen.
package fleetaudit.lib.skew

# Share of a fleet's hosts (percent) that one value needs to be the majority.
threshold := 60

# expected says which value the hosts should share. values maps host name to
# the host's value; baseline is the profile's declared value, or null.
#   {"basis": "baseline", "value": v}                       declared by the profile
#   {"basis": "majority", "value": v, "hosts": n, "of": t}  held by >= threshold% of t hosts
#   {"basis": "none", "distribution": {v: n}, "of": t}      no consensus
expected(_, baseline) := {"basis": "baseline", "value": baseline} if baseline != null

expected(values, null) := from_distribution(distribution(values), null)

# from_distribution is expected for a fleet already counted as {value: hosts}.
from_distribution(_, baseline) := {"basis": "baseline", "value": baseline} if baseline != null

from_distribution(dist, null) := {"basis": "majority", "value": v, "hosts": n, "of": total} if {
	total := sum([n | some n in dist])
	some v, n in dist
	n * 100 >= total * threshold
} else := {"basis": "none", "distribution": dist, "of": sum([n | some n in dist])}

# distribution counts the hosts holding each distinct value; one pass per
# distinct value, so a 10,000-host fleet with a few versions stays cheap.
distribution(values) := {v: count([1 | some x in values; x == v]) | some v in {y | some y in values}}

# finding is the finding for one host given the fleet's expectation, and is
# undefined when the host holds the expected value. what names the fact in
# messages ("NCCL"); evidence lists the fact paths the finding cites.
finding(host, value, exp, what, evidence) := {
	"host": host,
	"msg": sprintf("%s %s differs from the fleet's %s", [what, value, describe_expected(exp)]),
	"evidence": evidence,
	"expected": exp.value,
	"basis": exp.basis,
} if {
	exp.basis != "none"
	value != exp.value
}

finding(host, value, exp, what, evidence) := {
	"host": host,
	"msg": sprintf("no consensus on %s across the fleet: this host has %s; %s (a majority needs %d%% of hosts)", [what, value, describe_distribution(exp), threshold]),
	"evidence": evidence,
	"basis": "none",
} if {
	exp.basis == "none"
}

describe_expected(exp) := sprintf("declared baseline %s", [exp.value]) if exp.basis == "baseline"

describe_expected(exp) := sprintf("majority %s (%d of %d hosts)", [exp.value, exp.hosts, exp.of]) if exp.basis == "majority"

describe_distribution(exp) := concat(", ", [sprintf("%s on %d of %d", [v, n, exp.of]) | some v, n in exp.distribution])

