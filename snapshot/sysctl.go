package snapshot

// Sysctl holds running values (from /proc/sys) and configured values (from
// sysctl.d and sysctl.conf), keyed by dotted name ("vm.max_map_count").
type Sysctl struct {
	// Running values are as the kernel prints them, without the final
	// newline: multi-field values keep their tabs ("32768\t60999").
	Running map[string]string `json:"running"`
	// Configured values are what systemd-sysctl applies at boot after
	// override by file name and lexical order; glob keys are kept, not
	// expanded, and a "-key" exclusion removes the key.
	Configured map[string]string `json:"configured"`
	// Missing lists configured keys that do not exist under /proc/sys.
	Missing []string `json:"missing"`
	// Files are the configuration files read, in the order applied.
	Files []string `json:"files"`
}
