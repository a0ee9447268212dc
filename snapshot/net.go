package snapshot

// Net is the host's network interfaces as /sys/class/net shows them.
// Provenance: net.present is /sys/class/net; net.interfaces.<name>.<field>
// the attribute file (/sys/class/net/<name>/mtu, operstate, type), and
// net.interfaces.<name>.rdma the device link that ties it to RDMA devices.
type Net struct {
	// Present is true when /sys/class/net was read: a rendered config repo
	// or an image has no interfaces, and rules must not read "none" there.
	Present bool `json:"present"`
	// Interfaces are keyed by interface name.
	Interfaces map[string]NetInterface `json:"interfaces"`
}

// NetInterface is one /sys/class/net entry.
type NetInterface struct {
	// OperState is the RFC 2863 state the kernel prints ("up", "down",
	// "dormant", "unknown", ...).
	OperState string `json:"operstate"`
	MTU       int    `json:"mtu"`
	// Type is the ARPHRD number (1 Ethernet, 32 InfiniBand, 772 loopback).
	Type int `json:"type"`
	// PCIAddress is the PCI function behind the interface, "" for virtual
	// ones (bonds, bridges, loopback).
	PCIAddress string `json:"pci_address,omitempty"`
	// RDMA lists the RDMA devices on the same PCI function (a RoCE netdev,
	// an IPoIB interface, an EFA instance's ENA is not one): the
	// interface faces the RDMA fabric.
	RDMA []string `json:"rdma,omitempty"`
}
