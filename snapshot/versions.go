package snapshot

// Provenance of these facts: os.* is the os-release file and line;
// kernel.* the /proc/sys/kernel file; nvidia.* the proc or sys file, the dpkg
// status line of fabric_manager, and every libnvidia-ml file for
// nvml_versions, the nvidia-smi command line for each
// nvidia.gpus.<i>.persistence_mode; modules.loaded is /proc/modules and each
// modules.configured.<name> the file and line that loads it, and
// modules.blacklisted.<name> and modules.install.<name> the modprobe.d line;
// libraries.nccl, libraries.cuda, libraries.nccl_net and libraries.verbs
// list their entries' Source fields.

// Kernel is the running kernel.
type Kernel struct {
	Release string `json:"release"`
	Version string `json:"version"`
	// Arch is the machine name (uname -m). /proc/sys/kernel/arch exists since
	// Linux 6.1; older kernels take it from an arch-suffixed release
	// (5.14.0-427.el9_4.x86_64) or the NVIDIA module banner, else "".
	Arch string `json:"arch"`
	// Installed are the kernels installed in an offline image, which runs
	// none (/lib/modules/<release>, /boot/vmlinuz-<release>), in version
	// order; not collected on a running host.
	Installed []string `json:"installed,omitempty"`
	// BootRelease is the one of Installed the image boots: the newest by
	// version order that has a kernel image, as the boot loader's default
	// usually is. Rules that depend on the kernel read it where Release is
	// absent.
	BootRelease string `json:"boot_release,omitempty"`
}

// OSRelease is /etc/os-release (falling back to /usr/lib/os-release).
type OSRelease struct {
	ID         string `json:"id"`
	IDLike     string `json:"id_like"`
	VersionID  string `json:"version_id"`
	PrettyName string `json:"pretty_name"`
}

// NVIDIA is the GPU driver stack.
type NVIDIA struct {
	// Present is true when the nvidia kernel module is loaded.
	Present bool `json:"present"`
	// DriverVersion is the loaded kernel module version ("550.90.07").
	DriverVersion string `json:"driver_version"`
	// Flavor is "open" or "proprietary" (from /proc/driver/nvidia/version).
	Flavor string `json:"flavor"`
	// ModuleVersion is /sys/module/nvidia/version.
	ModuleVersion string `json:"module_version"`
	// NVMLVersions are the versions of libnvidia-ml.so.<ver> found in the
	// loader's directories, sorted; set by the libraries collector.
	NVMLVersions []string `json:"nvml_versions"`
	// GPUs are sorted by bus id.
	GPUs []GPU `json:"gpus"`
	// FabricManager is the installed nvidia-fabricmanager version, "unknown"
	// when only its binary is present, "" if absent. Its source says which.
	FabricManager string `json:"fabric_manager"`
	// NVSwitches is the number of NVSwitch devices the driver (or, without
	// the nvswitch driver, the PCI bus) reports.
	NVSwitches int `json:"nvswitches"`
	// Persistenced is true when an nvidia-persistenced process is running.
	Persistenced bool `json:"persistenced"`
}

// GPU is one entry of /proc/driver/nvidia/gpus.
type GPU struct {
	BusID string `json:"bus_id"`
	Model string `json:"model"`
	// PersistenceMode is "enabled" or "disabled" as NVML reports it
	// (nvidia-smi --query-gpu=persistence_mode). Neither /proc nor /sys show
	// it, so it is only collected when commands may run on the host
	// (collectors.Target.Exec); absent means unknown, never off. Its source
	// is "command: <command line>".
	PersistenceMode string `json:"persistence_mode,omitempty"`
}

// Modules are kernel modules loaded now, configured to load at boot, and
// blocked by modprobe.d.
type Modules struct {
	// Loaded are the names in /proc/modules, sorted.
	Loaded []string `json:"loaded"`
	// Configured is the set of modules that modules-load.d or /etc/modules
	// load at boot (every value is true), so each name has its own fact
	// path, modules.configured.<name>, and its own file:line provenance.
	// Names are normalised as kmod does ("nvidia-peermem" is nvidia_peermem).
	Configured map[string]bool `json:"configured"`
	// Blacklisted is the set of modules a modprobe.d "blacklist" line names
	// (every value is true), each with its file:line provenance at
	// modules.blacklisted.<name>. kmod then ignores the module's aliases,
	// and systemd-modules-load skips it; "modprobe <name>" still loads it.
	Blacklisted map[string]bool `json:"blacklisted,omitempty"`
	// Install is the command of a modprobe.d "install" line by module name
	// (or the line's fnmatch pattern), which kmod runs instead of loading
	// the module: "/bin/false" or "/bin/true" keeps it from loading at all.
	// The first line for a name wins, as in kmod; provenance at
	// modules.install.<name>.
	Install map[string]string `json:"install,omitempty"`
}

// Libraries are user-space libraries that jobs load.
type Libraries struct {
	// NCCL and CUDA (the runtime, libcudart) hold every copy found, sorted
	// by version then path; one physical file appears once.
	NCCL []Library `json:"nccl"`
	CUDA []Library `json:"cuda"`
	// NCCLNet are NCCL net plugins (libnccl-net*.so: aws-ofi-nccl for EFA,
	// nccl-rdma-sharp-plugins, ...), Version from a numeric file name
	// suffix or "unknown". Written by every collector since this field was
	// added: a snapshot without it predates it and says nothing of plugins.
	NCCLNet []Library `json:"nccl_net"`
	// Verbs are the libibverbs copies; Version is the rdma-core release the
	// real file's name carries (libibverbs.so.1.14.50.0 is rdma-core 50.0).
	Verbs []Library `json:"verbs"`
}

// Library is one installed copy of a library.
type Library struct {
	// Version is "2.18.3", or "unknown" when How is "none".
	Version string `json:"version"`
	// Path is the library file with links resolved, or the dist-info
	// directory of a wheel whose library file is missing.
	Path string `json:"path"`
	// Kind is "system" (a loader directory: the default ones and
	// ld.so.conf), "wheel" (Python package) or "other" (a CUDA toolkit or
	// conda directory not on the loader path, a login LD_LIBRARY_PATH
	// directory, or the file NCCL_NET_PLUGIN names).
	Kind string `json:"kind"`
	// How says how the version was found: "file-name", "dist-info",
	// "embedded-string" or "none".
	How string `json:"how"`
	// Source is where the version was read: the file, or METADATA:line.
	Source Provenance `json:"source"`
}
