package fleetaudit.lib.version_test

import data.fleetaudit.lib.version

test_parse if {
	version.parse("550.90.07") == [550, 90, 7]
	version.parse("5.15.0-105-generic") == [5, 15, 0]
	version.parse("2.18.3") == [2, 18, 3]
}

test_parse_rejects_non_versions if {
	not version.parse("unknown")
	not version.parse("")
	not version.parse("2.18.x")
}

test_less if {
	version.less("535.104.05", "550.90.07")
	version.less("550.54.14", "550.90.07")
	version.less("2.9.9", "2.18.3")
	not version.less("550.90.07", "550.90.07")
	not version.less("555.42.02", "550.90.07")
	version.less("550.90", "550.90.07")
}

test_major if {
	version.major("535.104.05") == 535
	not version.major("n/a")
}
