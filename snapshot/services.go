package snapshot

// Services are the systemd services that start jobs (slurmd, containerd,
// docker, kubelet, crio) and the locked-memory limit they pass on: a job
// inherits the service's RLIMIT_MEMLOCK, not pam_limits'. Provenance:
// services.units.<unit>.memlock is the unit file or drop-in line that set
// it, or "default: ..." when none did; running_memlock is
// /proc/<pid>/limits.
type Services struct {
	// Units are keyed by unit name ("slurmd.service"); only units that are
	// installed or running appear.
	Units map[string]ServiceUnit `json:"units"`
}

// ServiceUnit is one job-starting service.
type ServiceUnit struct {
	// File is the unit file systemd loads, "" when none is installed (a
	// daemon started otherwise); Masked when it links to /dev/null.
	File   string `json:"file,omitempty"`
	Masked bool   `json:"masked,omitempty"`
	// DropIns are the drop-in files applied, in the order systemd reads them.
	DropIns []string `json:"drop_ins"`
	// Memlock is the configured LimitMEMLOCK=, or the manager's
	// DefaultLimitMEMLOCK= when the unit sets none; nil when no file sets
	// either (systemd's built-in default applies, see MemlockDefault).
	Memlock *MemlockLimit `json:"memlock,omitempty"`
	// MemlockDefault is true when no file sets the limit: systemd 251 and
	// later default to 8M, older ones pass the kernel's default (8 MiB
	// since Linux 5.16, 64 KiB before), so it is at most 8192 KiB.
	MemlockDefault bool `json:"memlock_default,omitempty"`
	// RunningPID is the service's main process found in /proc, 0 if none.
	RunningPID int `json:"running_pid,omitempty"`
	// RunningMemlock is that process's "Max locked memory" limit.
	RunningMemlock *MemlockLimit `json:"running_memlock,omitempty"`
}

// MemlockLimit is a soft and hard RLIMIT_MEMLOCK, each a number of KiB as
// text ("8192") or "unlimited", as limits.effective writes them.
type MemlockLimit struct {
	Soft string `json:"soft"`
	Hard string `json:"hard"`
}
