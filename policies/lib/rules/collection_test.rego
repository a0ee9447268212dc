package fleetaudit.rules.collection_test

import data.fleetaudit.rules.collection

test_one_finding_per_error if {
	host := {"errors": [
		{"collector": "sysctl", "path": "/etc/sysctl.d/10-dir.conf", "reason": "read: is a directory"},
		{"collector": "logind", "path": "/etc/systemd/logind.conf", "reason": "RemoveIPC: invalid value \"maybe\""},
	]}
	findings := collection.collection_error with input as host
	count(findings) == 2
	{
		"msg": "sysctl collector could not read /etc/sysctl.d/10-dir.conf: read: is a directory",
		"evidence": ["errors.0"],
	} in findings
	some f in findings
	f.evidence == ["errors.1"]
}

test_no_errors_passes if {
	count(collection.collection_error) == 0 with input as {"errors": []}
	count(collection.collection_error) == 0 with input as {}
}
