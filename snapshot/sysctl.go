package snapshot

// Sysctl holds running values (from /proc/sys) and configured values (from
// sysctl.conf and sysctl.d), keyed by dotted name ("vm.max_map_count").
type Sysctl struct {
	Running    map[string]string `json:"running"`
	Configured map[string]string `json:"configured"`
	// Missing lists configured keys that do not exist under /proc/sys.
	Missing []string `json:"missing"`
}
