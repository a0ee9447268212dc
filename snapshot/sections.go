package snapshot

// Fact paths follow the JSON names below, joined with dots:
// "boot.configured.params.hugetlb_cma", "sysctl.running.vm.max_map_count",
// "limits.effective.*.memlock.soft", "logind.remove_ipc".

// Boot is the kernel command line, as running and as configured for the next boot.
type Boot struct {
	Running    Cmdline    `json:"running"`
	Configured BootConfig `json:"configured"`
}

// Cmdline is one kernel command line and its parameters. A flag without "=" has
// the value "". When a parameter repeats, the last occurrence wins, as in the kernel.
type Cmdline struct {
	Present bool              `json:"present"`
	Cmdline string            `json:"cmdline"`
	Params  map[string]string `json:"params"`
}

// BootConfig is the command line the boot loader configuration will pass at the
// next boot.
type BootConfig struct {
	// Loader names the configuration the params come from: "grub",
	// "kernel-cmdline" (/etc/kernel/cmdline, systemd-boot and UKIs) or "" when
	// none is present.
	Loader string `json:"loader"`
	Cmdline
	// Grub holds the GRUB variables after sourcing /etc/default/grub and grub.d.
	Grub *GrubDefaults `json:"grub,omitempty"`
	// KernelCmdline is /etc/kernel/cmdline when present.
	KernelCmdline *Cmdline `json:"kernel_cmdline,omitempty"`
}

// GrubDefaults are the two command-line variables grub-mkconfig passes to
// Linux entries. Normal entries get LINUX followed by LINUX_DEFAULT.
type GrubDefaults struct {
	CmdlineLinux        string   `json:"cmdline_linux"`
	CmdlineLinuxDefault string   `json:"cmdline_linux_default"`
	Files               []string `json:"files"`
}

// Sysctl holds running values (from /proc/sys) and configured values (from
// sysctl.conf and sysctl.d), keyed by dotted name ("vm.max_map_count").
type Sysctl struct {
	Running    map[string]string `json:"running"`
	Configured map[string]string `json:"configured"`
	// Missing lists configured keys that do not exist under /proc/sys.
	Missing []string `json:"missing"`
}

// Limits are pam_limits settings.
type Limits struct {
	Entries []LimitEntry `json:"entries"`
	// Effective maps a domain ("*", "@group", "user") to item to value, after
	// limits.conf(5) precedence. The "*" domain is always present.
	Effective map[string]map[string]LimitValue `json:"effective"`
}

// LimitEntry is one line of limits.conf or limits.d.
type LimitEntry struct {
	Domain string `json:"domain"`
	Type   string `json:"type"`
	Item   string `json:"item"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// LimitValue is an effective soft/hard pair. "unlimited" spells no limit;
// "" means not set by configuration (the kernel default applies).
type LimitValue struct {
	Soft string `json:"soft"`
	Hard string `json:"hard"`
}

// Logind is systemd-logind configuration that affects jobs.
type Logind struct {
	// RemoveIPC is "yes" or "no" after drop-ins and the OS default.
	RemoveIPC string `json:"remove_ipc"`
	// RemoveIPCDefault is true when no file set RemoveIPC.
	RemoveIPCDefault bool     `json:"remove_ipc_default"`
	Files            []string `json:"files"`
}

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

// Memory is /proc/meminfo (kB unless named otherwise) and the THP mode.
type Memory struct {
	MemTotalKB           int64  `json:"mem_total_kb"`
	CmaTotalKB           int64  `json:"cma_total_kb"`
	CmaFreeKB            int64  `json:"cma_free_kb"`
	HugePagesTotal       int64  `json:"hugepages_total"`
	HugePagesFree        int64  `json:"hugepages_free"`
	HugePagesRsvd        int64  `json:"hugepages_rsvd"`
	HugePagesSurp        int64  `json:"hugepages_surp"`
	HugepagesizeKB       int64  `json:"hugepagesize_kb"`
	TransparentHugepages string `json:"transparent_hugepages"`
}

// RDMA are the host's RDMA devices.
type RDMA struct {
	Devices []RDMADevice `json:"devices"`
	// DevFiles lists /dev/infiniband entries (uverbs0, rdma_cm, ...).
	DevFiles []string `json:"dev_files"`
}

// RDMADevice is one /sys/class/infiniband entry.
type RDMADevice struct {
	Name   string     `json:"name"`
	Driver string     `json:"driver"`
	Ports  []RDMAPort `json:"ports"`
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`
	LinkLayer string `json:"link_layer"`
	Rate      string `json:"rate"`
}

// IOMMU is the IOMMU state.
type IOMMU struct {
	// Enabled is true when /sys/class/iommu has at least one unit.
	Enabled bool     `json:"enabled"`
	Units   []string `json:"units"`
	// Passthrough is true when the cmdline asks for iommu=pt (or
	// iommu.passthrough=1).
	Passthrough bool `json:"passthrough"`
	// Hypervisor is true when the CPU reports it runs under a hypervisor.
	Hypervisor bool `json:"hypervisor"`
}

// PCI is the part of the PCI topology that matters for GPU and NIC paths.
type PCI struct {
	Devices []PCIDevice `json:"devices"`
}

// PCIDevice is one PCI function.
type PCIDevice struct {
	Address string `json:"address"`
	Class   string `json:"class"`
	Vendor  string `json:"vendor"`
	Device  string `json:"device"`
	Driver  string `json:"driver,omitempty"`
	// Upstream lists the bridges between this function and its root port,
	// nearest first.
	Upstream []string `json:"upstream,omitempty"`
	// ACS is the ACS control register of a bridge, nil when the bridge has no ACS
	// capability or its extended config space could not be read.
	ACS *ACSControl `json:"acs,omitempty"`
	// ConfigReadable is false when only the first 64 bytes of config space
	// could be read (unprivileged).
	ConfigReadable bool `json:"config_readable"`
}

// ACSControl are the ACS control bits of a bridge.
type ACSControl struct {
	SourceValidation   bool `json:"source_validation"`
	TranslationBlock   bool `json:"translation_blocking"`
	RequestRedirect    bool `json:"request_redirect"`
	CompletionRedirect bool `json:"completion_redirect"`
	UpstreamForwarding bool `json:"upstream_forwarding"`
	EgressControl      bool `json:"egress_control"`
	DirectTranslated   bool `json:"direct_translated"`
}

// NCCLConfig is NCCL configuration outside the job: /etc/nccl.conf and
// NCCL_*/FI_* exports in /etc/environment and /etc/profile.d.
type NCCLConfig struct {
	File map[string]string `json:"file"`
	Env  map[string]string `json:"env"`
	// Effective is File overlaid by Env: NCCL gives the environment precedence.
	Effective map[string]string `json:"effective"`
}
