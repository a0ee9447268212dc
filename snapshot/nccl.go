package snapshot

// NCCLConfig is NCCL configuration outside the job: /etc/nccl.conf and
// NCCL_*/FI_* exports in /etc/environment and /etc/profile.d.
type NCCLConfig struct {
	File map[string]string `json:"file"`
	Env  map[string]string `json:"env"`
	// Effective is File overlaid by Env: NCCL gives the environment precedence.
	Effective map[string]string `json:"effective"`
}
