package snapshot

// NCCLConfig is NCCL configuration outside the job: /etc/nccl.conf and
// NCCL_*/FI_* exports in /etc/environment and /etc/profile.d.
type NCCLConfig struct {
	// File is what /etc/nccl.conf sets; NCCL keeps the first of repeated keys.
	File map[string]string `json:"file"`
	// Env is NCCL_*/FI_* as a login shell exports them: /etc/environment,
	// then /etc/profile.d/*.sh in order, later assignments winning.
	Env map[string]string `json:"env"`
	// Effective is File overlaid by Env: NCCL never overrides a variable
	// that is already in the environment with one from nccl.conf.
	Effective map[string]string `json:"effective"`
	// TopoFileMissing is true when the effective NCCL_TOPO_FILE is an
	// absolute path with no file there; its source is the line that set it.
	TopoFileMissing bool `json:"topo_file_missing,omitempty"`
}
