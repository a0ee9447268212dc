package snapshot

// Logind is systemd-logind configuration that affects jobs.
type Logind struct {
	// Installed is true when the systemd-logind binary is present. Hosts
	// without it (minimal containers and VMs) never apply RemoveIPC.
	Installed bool `json:"installed"`
	// RemoveIPC is "yes" or "no" after logind.conf, its drop-ins and, when
	// no file sets it, the default of the host's distribution.
	RemoveIPC string `json:"remove_ipc"`
	// RemoveIPCDefault is true when no file set RemoveIPC.
	RemoveIPCDefault bool `json:"remove_ipc_default"`
	// Files are the configuration files read, in the order applied.
	Files []string `json:"files"`
}
