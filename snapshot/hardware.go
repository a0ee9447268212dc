package snapshot

// Memory is /proc/meminfo (kB unless named otherwise) and the THP mode.
type Memory struct {
	// Present is true when /proc/meminfo was read (false on a config repo).
	Present    bool  `json:"present"`
	MemTotalKB int64 `json:"mem_total_kb"`
	// CmaPresent tells a CmaTotal of 0 from a kernel without CONFIG_CMA,
	// which omits the Cma* lines.
	CmaPresent     bool  `json:"cma_present"`
	CmaTotalKB     int64 `json:"cma_total_kb"`
	CmaFreeKB      int64 `json:"cma_free_kb"`
	HugePagesTotal int64 `json:"hugepages_total"`
	HugePagesFree  int64 `json:"hugepages_free"`
	HugePagesRsvd  int64 `json:"hugepages_rsvd"`
	HugePagesSurp  int64 `json:"hugepages_surp"`
	HugepagesizeKB int64 `json:"hugepagesize_kb"`
	// TransparentHugepages is the selected THP mode ("always", "madvise",
	// "never"), "" when the kernel has no THP.
	TransparentHugepages string `json:"transparent_hugepages"`
}

// RDMA are the host's RDMA devices.
type RDMA struct {
	// Devices are keyed by /sys/class/infiniband name (mlx5_0, efa_0, or a
	// name rdma-core's udev rules gave, such as rdmap16s27).
	Devices map[string]RDMADevice `json:"devices"`
	// DevFiles lists /dev/infiniband entries (uverbs0, rdma_cm, ...).
	DevFiles []string `json:"dev_files"`
}

// RDMADevice is one /sys/class/infiniband entry.
type RDMADevice struct {
	// Driver is the kernel driver of the underlying device (mlx5_core, efa).
	Driver string `json:"driver"`
	// PCIAddress is the PCI function behind the device, "" when not PCI.
	PCIAddress string `json:"pci_address,omitempty"`
	// Ports are keyed by port number ("1").
	Ports map[string]RDMAPort `json:"ports"`
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	// State is the name the kernel prints ("ACTIVE", "DOWN", ...) and
	// StateCode its number (4 for ACTIVE).
	State     string `json:"state"`
	StateCode int    `json:"state_code"`
	// LinkLayer is "InfiniBand", "Ethernet" (RoCE) or "Unknown" (EFA).
	LinkLayer string `json:"link_layer"`
	// Rate is the kernel's text ("400 Gb/sec (4X NDR)"), RateGbps its number.
	Rate     string  `json:"rate"`
	RateGbps float64 `json:"rate_gbps"`
}

// IOMMU is the IOMMU state.
type IOMMU struct {
	// Enabled is true when /sys/class/iommu has at least one unit.
	Enabled bool     `json:"enabled"`
	Units   []string `json:"units"`
	// Passthrough is true when DMA bypasses IOMMU translation.
	Passthrough bool `json:"passthrough"`
	// PassthroughEvidence says what decided Passthrough: "iommu_groups" (the
	// default domain type of the groups, best evidence), "cmdline" (iommu=pt,
	// iommu.passthrough=) or "" when neither says anything.
	PassthroughEvidence string `json:"passthrough_evidence"`
	// GroupTypes counts IOMMU groups by default domain type ("identity" is
	// passthrough; "DMA", "DMA-FQ", "DMA-SQ" translate).
	GroupTypes map[string]int `json:"group_types"`
	// Hypervisor is true when the host is a guest: the x86 "hypervisor" CPU
	// flag, or /sys/hypervisor/type (Xen).
	Hypervisor bool `json:"hypervisor"`
}

// PCI is the part of the PCI topology that matters for GPU and NIC paths:
// NVIDIA GPUs and NVSwitches, network controllers, and every bridge above them.
type PCI struct {
	// Devices are keyed by PCI address ("0000:1b:00.0").
	Devices map[string]PCIDevice `json:"devices"`
	// ConfigUnreadable counts functions whose config space was cut to the
	// standard header (read without CAP_SYS_ADMIN), so ACS is unknown.
	ConfigUnreadable int `json:"config_unreadable"`
}

// PCIDevice is one PCI function.
type PCIDevice struct {
	// Kind is "gpu", "nvswitch", "network" or "bridge".
	Kind string `json:"kind"`
	// Class, Vendor and Device are as sysfs prints them ("0x030200", "0x10de").
	Class  string `json:"class"`
	Vendor string `json:"vendor"`
	Device string `json:"device"`
	Driver string `json:"driver,omitempty"`
	// Upstream lists the bridges between this function and its root port,
	// nearest first.
	Upstream []string `json:"upstream,omitempty"`
	// ACS is the ACS control register, nil when the function has no ACS
	// capability or its extended config space could not be read.
	ACS *ACSControl `json:"acs,omitempty"`
	// ConfigReadable is false when config space could not be read past the
	// standard header (unprivileged reads stop at 64 bytes).
	ConfigReadable bool `json:"config_readable"`
	// BAR1Bytes is the size of a GPU's BAR1, the aperture peers (RDMA NICs)
	// map its memory through: line 2 of the sysfs resource file. 0 when
	// unknown or not a GPU.
	BAR1Bytes int64 `json:"bar1_bytes,omitempty"`
	// IOMMUGroupType is the default domain type of the function's IOMMU group.
	IOMMUGroupType string `json:"iommu_group_type,omitempty"`
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
