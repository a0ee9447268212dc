package fleetaudit.rules.libraries_test

import data.fleetaudit.rules.libraries

lib(v, kind, path) := {"version": v, "kind": kind, "path": path}

test_system_and_wheel_differ if {
	h := {"libraries": {"nccl": [
		lib("2.18.3", "system", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3"),
		lib("2.20.5", "wheel", "/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2"),
	]}}
	[f] := [f | some f in libraries.nccl_multiple_versions with input as h]
	f.msg == "2 NCCL versions on the host: 2.18.3 (system, /usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3); 2.20.5 (wheel, /usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2)"
}

test_same_version_twice_passes if {
	h := {"libraries": {"nccl": [lib("2.21.5", "system", "/usr/lib64/libnccl.so.2.21.5"), lib("2.21.5", "wheel", "/opt/venv/nvidia/nccl/lib/libnccl.so.2")]}}
	count(libraries.nccl_multiple_versions) == 0 with input as h
}

test_unknown_versions_do_not_count if {
	h := {"libraries": {"nccl": [lib("2.21.5", "system", "/a"), lib("unknown", "system", "/usr/lib/libnccl.so")]}}
	count(libraries.nccl_multiple_versions) == 0 with input as h
}
