package snapshot

// Logind is systemd-logind configuration that affects jobs.
type Logind struct {
	// RemoveIPC is "yes" or "no" after drop-ins and the OS default.
	RemoveIPC string `json:"remove_ipc"`
	// RemoveIPCDefault is true when no file set RemoveIPC.
	RemoveIPCDefault bool     `json:"remove_ipc_default"`
	Files            []string `json:"files"`
}
