package snapshot

// Kernel is the running kernel.
type Kernel struct {
	Release string `json:"release"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
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
	// NVMLVersions are the versions of libnvidia-ml.so.<ver> found on the host.
	NVMLVersions []string `json:"nvml_versions"`
	GPUs         []GPU    `json:"gpus"`
	// FabricManager is the installed nvidia-fabricmanager version, "" if absent.
	FabricManager string `json:"fabric_manager"`
	// NVSwitches is the number of NVSwitch devices seen on the PCI bus.
	NVSwitches int `json:"nvswitches"`
	// Persistenced is true when an nvidia-persistenced process is running.
	Persistenced bool `json:"persistenced"`
}

// GPU is one entry of /proc/driver/nvidia/gpus.
type GPU struct {
	BusID string `json:"bus_id"`
	Model string `json:"model"`
}

// Modules are kernel modules loaded now and configured to load at boot.
type Modules struct {
	Loaded     []string `json:"loaded"`
	Configured []string `json:"configured"`
}

// Libraries are user-space libraries that jobs load.
type Libraries struct {
	NCCL []Library `json:"nccl"`
	CUDA []Library `json:"cuda"`
}

// Library is one installed copy of a library.
type Library struct {
	Version string `json:"version"`
	Path    string `json:"path"`
	// Kind is "system" (loader path), "wheel" (Python package) or "other".
	Kind string `json:"kind"`
	// How says how the version was found: "file-name", "dist-info" or "embedded-string".
	How string `json:"how"`
}
