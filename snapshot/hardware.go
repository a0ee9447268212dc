package snapshot

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
