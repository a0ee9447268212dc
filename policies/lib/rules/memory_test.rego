package fleetaudit.rules.memory_test

import data.fleetaudit.rules.memory

test_thp_always if {
	count(memory.thp_always) == 1 with input as {"memory": {"transparent_hugepages": "always"}}
}

test_thp_madvise_passes if {
	count(memory.thp_always) == 0 with input as {"memory": {"transparent_hugepages": "madvise"}}
	count(memory.thp_always) == 0 with input as {"memory": {"transparent_hugepages": ""}}
}
