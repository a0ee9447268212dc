package fleetaudit.rules.logind_test

import data.fleetaudit.rules.logind

test_explicit_yes if {
	[f] := [f | some f in logind.removeipc_enabled with input as {"logind": {"remove_ipc": "yes", "remove_ipc_default": false}}]
	f.evidence == ["logind.remove_ipc"]
	f.fix == {"kind": "logind", "set": {"RemoveIPC": "no"}}
	startswith(f.msg, "RemoveIPC=yes")
}

test_default_yes_names_the_os if {
	host := {
		"logind": {"remove_ipc": "yes", "remove_ipc_default": true},
		"os": {"id": "ubuntu", "version_id": "22.04"},
	}
	[f] := [f | some f in logind.removeipc_enabled with input as host]
	f.evidence == ["logind.remove_ipc", "os.id", "os.version_id"]
	contains(f.msg, "defaults to yes on ubuntu 22.04")
}

test_no_passes if {
	count(logind.removeipc_enabled) == 0 with input as {"logind": {"remove_ipc": "no", "remove_ipc_default": true}}
}

test_unknown_passes if {
	count(logind.removeipc_enabled) == 0 with input as {"logind": {"remove_ipc": ""}}
	count(logind.removeipc_enabled) == 0 with input as {}
}

test_no_finding_without_logind if {
	h := {"source": {"kind": "local"}, "os": {"id": "ubuntu", "version_id": "24.04"}, "logind": {"installed": false, "remove_ipc": "yes", "remove_ipc_default": true}}
	count(logind.removeipc_enabled) == 0 with input as h
}

test_config_repo_still_checked_without_binary if {
	h := {"source": {"kind": "config-repo"}, "os": {"id": "ubuntu", "version_id": "24.04"}, "logind": {"installed": false, "remove_ipc": "yes", "remove_ipc_default": true}}
	count(logind.removeipc_enabled) == 1 with input as h
}

test_defaulted_yes_gets_the_same_fix if {
	host := {"logind": {"remove_ipc": "yes", "remove_ipc_default": true}, "os": {"id": "ubuntu", "version_id": "22.04"}}
	[f] := [f | some f in logind.removeipc_enabled with input as host]
	f.fix == {"kind": "logind", "set": {"RemoveIPC": "no"}}
}
