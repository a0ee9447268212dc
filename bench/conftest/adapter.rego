# conftest evaluates deny rules in package main, one input file at a time:
# this turns every finding of fleetaudit's host rules into one deny message,
# so both tools run the same Rego on the same snapshot files.
package main

deny contains msg if {
	some family, rule
	findings := data.fleetaudit.rules[family][rule]
	is_set(findings)
	some f in findings
	msg := sprintf("%s: %s", [rule, f.msg])
}
