package collectors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The sysfs trees under testdata/hosts (PCI functions, InfiniBand devices,
// IOMMU units and groups) are generated here, binary config space included,
// and committed. TestHardwareFixtures checks the committed trees match;
// FLEETAUDIT_REGEN_HW_FIXTURES=1 rewrites them.

const regenHWFixturesEnv = "FLEETAUDIT_REGEN_HW_FIXTURES"

// fxFunction is one PCI function of a fixture host.
type fxFunction struct {
	addr   string
	parent string // upstream bridge; "" for a function on a host bridge
	vendor uint16
	device uint16
	class  uint32
	driver string
	config []byte
	group  int // IOMMU group, -1 for none
	ib     []fxIBDevice
	// rawClass replaces the class attribute (garbage).
	rawClass string
	// driverFile makes driver a regular file instead of a link (garbage).
	driverFile bool
	// bar1 is a GPU's BAR1 size; non-zero writes a resource file.
	bar1 uint64
}

// fxResource is a GPU's sysfs resource file: BAR0 16 MiB, a 64-bit BAR1
// of bar1 bytes (so line 3 is empty), BAR3 32 MiB, no ROM.
func fxResource(bar1 uint64) []byte {
	line := func(start, size, flags uint64) string {
		if size == 0 {
			return "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
		}
		return fmt.Sprintf("0x%016x 0x%016x 0x%016x\n", start, start+size-1, flags)
	}
	return []byte(line(0xa0000000, 16<<20, 0x40200) + line(0x220000000000, bar1, 0x14220c) + line(0, 0, 0) +
		line(0x222000000000, 32<<20, 0x14220c) + line(0, 0, 0) + line(0, 0, 0) + line(0, 0, 0))
}

type fxIBDevice struct {
	name  string
	ports []fxIBPort
}

type fxIBPort struct{ state, physState, linkLayer, rate string }

type fxHost struct {
	root       string
	functions  []fxFunction
	groupTypes map[int]string
	// groupTypeDirs are groups whose type is a directory (garbage).
	groupTypeDirs []int
	iommuUnits    []string
	iommuKind     string // "intel-iommu" or "amd-iommu"
	devInfiniband []string
	nets          []fxNet
}

// fxNet is one /sys/class/net interface: on a PCI function, or virtual.
type fxNet struct {
	name, operstate string
	mtu, typ        int
	pci             string
}

// PCI Express port types (PCI_EXP_TYPE_*) for the capability register.
const (
	fxEndpoint       = 0x0
	fxRootPort       = 0x4
	fxUpstreamPort   = 0x5
	fxDownstreamPort = 0x6
)

// fxConfigSpace builds a 4096-byte config space with a PCI Express
// capability and an extended capability list: AER, then ACS when acsCtrl is
// set, else (for endpoints) Secondary PCIe.
func fxConfigSpace(vendor, device uint16, class uint32, portType int, acsCtrl *uint16) []byte {
	b := make([]byte, pciCfgSpaceExpSize)
	le := binary.LittleEndian
	le.PutUint16(b[0x00:], vendor)
	le.PutUint16(b[0x02:], device)
	le.PutUint16(b[0x04:], 0x0546) // memory, bus master, parity, SERR
	le.PutUint16(b[0x06:], 0x0010) // capability list
	b[0x08] = 0xa1                 // revision
	b[0x09], b[0x0a], b[0x0b] = byte(class), byte(class>>8), byte(class>>16)
	if portType != fxEndpoint {
		b[0x0e] = 0x01 // type 1 header: a bridge
	}
	b[0x34] = 0x40
	b[0x40], b[0x41] = 0x10, 0x00 // PCI Express capability, last in the list
	le.PutUint16(b[0x42:], uint16(0x2|portType<<4))
	extCap := func(pos int, id, version uint32, next int) {
		le.PutUint32(b[pos:], id|version<<16|uint32(next)<<20)
	}
	switch {
	case acsCtrl != nil:
		extCap(0x100, 0x0001, 2, 0x148)
		extCap(0x148, pciExtCapIDACS, 1, 0x158)
		le.PutUint16(b[0x148+4:], 0x005f) // ACS capability: SV TB RR CR UF DT
		le.PutUint16(b[0x148+pciACSCtrl:], *acsCtrl)
		extCap(0x158, 0x0019, 1, 0)
	case portType == fxEndpoint:
		extCap(0x100, 0x0001, 2, 0x148)
		extCap(0x148, 0x0019, 1, 0)
	default:
		extCap(0x100, 0x0001, 2, 0)
	}
	return b
}

func fxACS(ctrl uint16) *uint16 { return &ctrl }

const (
	fxACSOff      = 0x0000
	fxACSRedirect = pciACSSV | pciACSRR | pciACSCR | pciACSUF // what pci_std_enable_acs sets
)

func gpuNodeHost() fxHost {
	h := fxHost{
		root:       "gpu-node",
		groupTypes: map[int]string{},
		iommuUnits: []string{"dmar0", "dmar1", "dmar2", "dmar3", "dmar4", "dmar5", "dmar6", "dmar7"},
		iommuKind:  "intel-iommu",
	}
	group := 10
	addGroup := func() int {
		group++
		h.groupTypes[group] = "identity"
		return group
	}
	bridge := func(addr, parent string, vendor, device uint16, port int, ctrl *uint16, g int) {
		h.functions = append(h.functions, fxFunction{
			addr: addr, parent: parent, vendor: vendor, device: device, class: 0x060400,
			driver: "pcieport", config: fxConfigSpace(vendor, device, 0x060400, port, ctrl), group: g,
		})
	}
	// DGX H100 layout: each GPU shares a PCIe switch with its ConnectX-7.
	pairs := []struct{ nic, gpu int }{
		{0x18, 0x1b}, {0x40, 0x43}, {0x4f, 0x52}, {0x5e, 0x61},
		{0x9a, 0x9d}, {0xc0, 0xc3}, {0xce, 0xd1}, {0xdc, 0xdf},
	}
	for i, p := range pairs {
		root := fmt.Sprintf("0000:%02x:01.0", p.nic-3)
		up := fmt.Sprintf("0000:%02x:00.0", p.nic-2)
		downNIC := fmt.Sprintf("0000:%02x:00.0", p.nic-1)
		downGPU := fmt.Sprintf("0000:%02x:01.0", p.nic-1)
		// An admin script turns ACS off on every bridge; it missed the
		// switch of the first pair, where the kernel left redirect on.
		ctrl := uint16(fxACSOff)
		if i == 0 {
			ctrl = fxACSRedirect
		}
		bridge(root, "", 0x8086, 0x352a, fxRootPort, fxACS(fxACSOff), addGroup())
		switchGroup := addGroup()
		bridge(up, root, 0x1000, 0xc030, fxUpstreamPort, nil, switchGroup)
		nicGroup, gpuGroup := switchGroup, switchGroup
		if i == 0 {
			nicGroup, gpuGroup = addGroup(), addGroup()
		}
		bridge(downNIC, up, 0x1000, 0xc030, fxDownstreamPort, fxACS(ctrl), nicGroup)
		bridge(downGPU, up, 0x1000, 0xc030, fxDownstreamPort, fxACS(ctrl), gpuGroup)
		h.functions = append(h.functions,
			fxFunction{
				addr: fmt.Sprintf("0000:%02x:00.0", p.nic), parent: downNIC,
				vendor: 0x15b3, device: 0x1021, class: 0x020700, driver: "mlx5_core",
				config: fxConfigSpace(0x15b3, 0x1021, 0x020700, fxEndpoint, nil), group: nicGroup,
				ib: []fxIBDevice{{name: fmt.Sprintf("mlx5_%d", i), ports: []fxIBPort{
					{"4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)"},
				}}},
			},
			fxFunction{
				addr: fmt.Sprintf("0000:%02x:00.0", p.gpu), parent: downGPU,
				vendor: 0x10de, device: 0x2330, class: 0x030200, driver: "nvidia",
				config: fxConfigSpace(0x10de, 0x2330, 0x030200, fxEndpoint, nil), group: gpuGroup,
				bar1: 128 << 30,
			})
	}
	// The four NVSwitches hang off one switch on the first root complex.
	bridge("0000:00:01.0", "", 0x8086, 0x352a, fxRootPort, fxACS(fxACSOff), addGroup())
	nvsGroup := addGroup()
	bridge("0000:02:00.0", "0000:00:01.0", 0x1000, 0xc030, fxUpstreamPort, nil, nvsGroup)
	for i := 0; i < 4; i++ {
		down := fmt.Sprintf("0000:03:%02x.0", i)
		bridge(down, "0000:02:00.0", 0x1000, 0xc030, fxDownstreamPort, fxACS(fxACSOff), nvsGroup)
		h.functions = append(h.functions, fxFunction{
			addr: fmt.Sprintf("0000:%02x:00.0", 5+i), parent: down,
			vendor: 0x10de, device: 0x22a3, class: 0x068000, driver: "nvidia-nvswitch",
			config: fxConfigSpace(0x10de, 0x22a3, 0x068000, fxEndpoint, nil), group: nvsGroup,
		})
	}
	// mlx5_8: the RoCE port behind bond0, on its own root port.
	bridge("0000:a8:01.0", "", 0x8086, 0x352a, fxRootPort, fxACS(fxACSOff), addGroup())
	h.functions = append(h.functions, fxFunction{
		addr: "0000:a9:00.0", parent: "0000:a8:01.0",
		vendor: 0x15b3, device: 0x1021, class: 0x020000, driver: "mlx5_core",
		config: fxConfigSpace(0x15b3, 0x1021, 0x020000, fxEndpoint, nil), group: addGroup(),
		ib: []fxIBDevice{{name: "mlx5_8", ports: []fxIBPort{
			{"4: ACTIVE", "5: LinkUp", "Ethernet", "200 Gb/sec (4X HDR)"},
		}}},
	})
	for i := 0; i <= 8; i++ {
		h.devInfiniband = append(h.devInfiniband, fmt.Sprintf("issm%d", i), fmt.Sprintf("umad%d", i), fmt.Sprintf("uverbs%d", i))
	}
	h.devInfiniband = append(h.devInfiniband, "rdma_cm")
	// IPoIB on each InfiniBand port (datagram mode), the RoCE port enslaved
	// to bond0, which carries NCCL's bootstrap (NCCL_SOCKET_IFNAME=bond0).
	h.nets = append(h.nets, fxNet{"lo", "unknown", 65536, 772, ""}, fxNet{"bond0", "up", 9000, 1, ""},
		fxNet{"ens9f0np0", "up", 9000, 1, "0000:a9:00.0"})
	for i, p := range pairs {
		h.nets = append(h.nets, fxNet{fmt.Sprintf("ib%d", i), "up", 2044, 32, fmt.Sprintf("0000:%02x:00.0", p.nic)})
	}
	return h
}

// dropinsHost is read without CAP_SYS_ADMIN: every config file stops at
// the 64-byte header.
func dropinsHost() fxHost {
	h := fxHost{
		root:       "dropins",
		groupTypes: map[int]string{},
		iommuUnits: []string{"ivhd0", "ivhd1", "ivhd2", "ivhd3"},
		iommuKind:  "amd-iommu",
	}
	header := func(vendor, device uint16, class uint32, port int) []byte {
		return fxConfigSpace(vendor, device, class, port, fxACS(fxACSRedirect))[:pciStdHeaderSize]
	}
	endpoints := []struct {
		root, addr string
		vendor     uint16
		device     uint16
		class      uint32
		driver     string
	}{
		{"0000:20:01.1", "0000:21:00.0", 0x8086, 0x1593, 0x020000, "ice"},
		{"0000:40:01.1", "0000:41:00.0", 0x10de, 0x2331, 0x030200, "nvidia"},
		{"0000:c0:01.1", "0000:c1:00.0", 0x10de, 0x2331, 0x030200, "nvidia"},
	}
	for i, e := range endpoints {
		h.groupTypes[20+2*i] = "DMA-FQ"
		h.groupTypes[21+2*i] = "DMA-FQ"
		h.functions = append(h.functions,
			fxFunction{
				addr: e.root, vendor: 0x1022, device: 0x14ab, class: 0x060400, driver: "pcieport",
				config: header(0x1022, 0x14ab, 0x060400, fxRootPort), group: 20 + 2*i,
			},
			fxFunction{
				addr: e.addr, parent: e.root, vendor: e.vendor, device: e.device, class: e.class, driver: e.driver,
				config: header(e.vendor, e.device, e.class, fxEndpoint), group: 21 + 2*i,
			})
	}
	return h
}

// webNodeHost is a KVM guest: virtio-net on the root bus, conventional
// (256-byte) config space, no IOMMU.
func webNodeHost() fxHost {
	cfg := fxConfigSpace(0x1af4, 0x1000, 0x020000, fxEndpoint, nil)[:pciCfgSpaceSize]
	cfg[0x40] = 0x09 // virtio's vendor capability: no PCI Express on i440fx
	return fxHost{
		root: "web-node",
		functions: []fxFunction{{
			addr: "0000:00:03.0", vendor: 0x1af4, device: 0x1000, class: 0x020000,
			driver: "virtio-pci", config: cfg, group: -1,
		}},
	}
}

// garbageHost breaks every PCI and RDMA source once.
func garbageHost() fxHost {
	loop := fxConfigSpace(0x8086, 0xa110, 0x060400, fxRootPort, nil)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x0001|2<<16|0x100<<20) // AER pointing at itself
	return fxHost{
		root:          "garbage",
		groupTypes:    map[int]string{1: "identity"},
		groupTypeDirs: []int{2},
		iommuUnits:    []string{"dmar0"},
		iommuKind:     "intel-iommu",
		functions: []fxFunction{
			{addr: "0000:00:1c.0", vendor: 0x8086, device: 0xa110, class: 0x060400, driver: "pcieport", config: loop, group: 1},
			{
				addr: "0000:03:00.0", parent: "0000:00:1c.0", vendor: 0x15b3, device: 0x101b, class: 0x020700,
				driver: "mlx5_core", driverFile: true, config: []byte{0xb3, 0x15, 0x1b, 0x10, 0x06, 0x05}, group: 2,
				ib: []fxIBDevice{{name: "mlx5_0", ports: []fxIBPort{{"garbage", "5: LinkUp", "InfiniBand", "fast"}}}},
			},
			{addr: "0000:04:00.0", parent: "0000:00:1c.0", vendor: 0x10de, device: 0x2330, rawClass: "three hundred\n", group: -1},
		},
	}
}

// dmabufNodeHost: two H100s and five ConnectX-7s on their own root ports,
// no IOMMU. mlx5_3 trained at 200 Gb/s where its peers run 400; mlx5_4's
// cable is out (DOWN, Polling).
func dmabufNodeHost() fxHost {
	h := fxHost{root: "dmabuf-node"}
	port := func(i int) fxIBPort {
		switch i {
		case 3:
			return fxIBPort{"4: ACTIVE", "5: LinkUp", "InfiniBand", "200 Gb/sec (4X HDR)"}
		case 4:
			return fxIBPort{"1: DOWN", "2: Polling", "InfiniBand", "10 Gb/sec (4X SDR)"}
		}
		return fxIBPort{"4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)"}
	}
	for i := 0; i < 7; i++ {
		root := fmt.Sprintf("0000:%02x:01.0", 0x10*(i+1))
		addr := fmt.Sprintf("0000:%02x:00.0", 0x10*(i+1)+1)
		h.functions = append(h.functions, fxFunction{
			addr: root, vendor: 0x8086, device: 0x352a, class: 0x060400, driver: "pcieport",
			config: fxConfigSpace(0x8086, 0x352a, 0x060400, fxRootPort, fxACS(fxACSOff)), group: -1,
		})
		if i < 2 {
			h.functions = append(h.functions, fxFunction{
				addr: addr, parent: root, vendor: 0x10de, device: 0x2330, class: 0x030200, driver: "nvidia",
				config: fxConfigSpace(0x10de, 0x2330, 0x030200, fxEndpoint, nil), group: -1,
			})
			continue
		}
		n := i - 2
		h.functions = append(h.functions, fxFunction{
			addr: addr, parent: root, vendor: 0x15b3, device: 0x1021, class: 0x020700, driver: "mlx5_core",
			config: fxConfigSpace(0x15b3, 0x1021, 0x020700, fxEndpoint, nil), group: -1,
			ib: []fxIBDevice{{name: fmt.Sprintf("mlx5_%d", n), ports: []fxIBPort{port(n)}}},
		})
		h.devInfiniband = append(h.devInfiniband, fmt.Sprintf("umad%d", n), fmt.Sprintf("uverbs%d", n))
		// IPoIB in connected mode here (MTU 4092 where gpu-node runs
		// datagram 2044); ib4 follows its port down.
		state := "up"
		if n == 4 {
			state = "down"
		}
		h.nets = append(h.nets, fxNet{fmt.Sprintf("ib%d", n), state, 4092, 32, addr})
	}
	h.devInfiniband = append(h.devInfiniband, "rdma_cm")
	// No ens1f0np0: the copied profile.d/60-site.sh names it for NCCL_SOCKET_IFNAME.
	h.nets = append(h.nets, fxNet{"lo", "unknown", 65536, 772, ""}, fxNet{"eno1", "up", 1500, 1, ""})
	return h
}

// efaNodeHost is an EC2 GPU instance (a KVM guest on Nitro): two A100s and
// four EFA devices on the root bus, the ENA interface eth0, no IOMMU.
func efaNodeHost() fxHost {
	h := fxHost{root: "efa-node"}
	cfg := func(vendor, device uint16, class uint32) []byte {
		return fxConfigSpace(vendor, device, class, fxEndpoint, nil)
	}
	h.functions = append(h.functions,
		fxFunction{addr: "0000:00:05.0", vendor: 0x1d0f, device: 0xec20, class: 0x020000, driver: "ena", config: cfg(0x1d0f, 0xec20, 0x020000), group: -1},
		// The hypervisor passes the GPUs through with a 256 MiB BAR1.
		fxFunction{addr: "0000:10:1c.0", vendor: 0x10de, device: 0x20b0, class: 0x030200, driver: "nvidia", config: cfg(0x10de, 0x20b0, 0x030200), group: -1, bar1: 256 << 20},
		fxFunction{addr: "0000:10:1d.0", vendor: 0x10de, device: 0x20b0, class: 0x030200, driver: "nvidia", config: cfg(0x10de, 0x20b0, 0x030200), group: -1, bar1: 256 << 20},
	)
	for i, slot := range []int{0x1b, 0x1a, 0x19, 0x18} {
		addr := fmt.Sprintf("0000:10:%02x.0", slot)
		h.functions = append(h.functions, fxFunction{
			addr: addr, vendor: 0x1d0f, device: 0xefa1, class: 0x020000, driver: "efa", config: cfg(0x1d0f, 0xefa1, 0x020000), group: -1,
			ib: []fxIBDevice{{name: fmt.Sprintf("rdmap16s%d", slot), ports: []fxIBPort{
				{"4: ACTIVE", "5: LinkUp", "Unknown", "100 Gb/sec (4X EDR)"},
			}}},
		})
		h.devInfiniband = append(h.devInfiniband, fmt.Sprintf("uverbs%d", i))
	}
	h.nets = append(h.nets, fxNet{"lo", "unknown", 65536, 772, ""}, fxNet{"eth0", "up", 9001, 1, "0000:00:05.0"})
	return h
}

// rocky9BLSHost is the grubby story's GPU node: one H100 and one ConnectX-7
// InfiniBand port, each on its own root port, so the pending hugetlb_cma
// meets RDMA as in the incident.
func rocky9BLSHost() fxHost {
	h := fxHost{root: "rocky9-bls"}
	rootPort := func(addr string) fxFunction {
		return fxFunction{
			addr: addr, vendor: 0x8086, device: 0x352a, class: 0x060400, driver: "pcieport",
			config: fxConfigSpace(0x8086, 0x352a, 0x060400, fxRootPort, fxACS(fxACSOff)), group: -1,
		}
	}
	h.functions = append(h.functions,
		rootPort("0000:10:01.0"),
		fxFunction{
			addr: "0000:11:00.0", parent: "0000:10:01.0", vendor: 0x10de, device: 0x2330, class: 0x030200, driver: "nvidia",
			config: fxConfigSpace(0x10de, 0x2330, 0x030200, fxEndpoint, nil), group: -1,
		},
		rootPort("0000:20:01.0"),
		fxFunction{
			addr: "0000:21:00.0", parent: "0000:20:01.0", vendor: 0x15b3, device: 0x1021, class: 0x020700, driver: "mlx5_core",
			config: fxConfigSpace(0x15b3, 0x1021, 0x020700, fxEndpoint, nil), group: -1,
			ib: []fxIBDevice{{name: "mlx5_0", ports: []fxIBPort{{"4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)"}}}},
		},
	)
	h.devInfiniband = append(h.devInfiniband, "umad0", "uverbs0", "rdma_cm")
	h.nets = append(h.nets, fxNet{"lo", "unknown", 65536, 772, ""}, fxNet{"ib0", "up", 4092, 32, "0000:21:00.0"})
	return h
}

func fxHosts() []fxHost {
	return []fxHost{gpuNodeHost(), dropinsHost(), webNodeHost(), garbageHost(), dmabufNodeHost(), efaNodeHost(), rocky9BLSHost()}
}

// fxGeneratedDirs are the trees the generator owns in each root, as globs.
var fxGeneratedDirs = []string{
	"sys/devices/pci*", "sys/devices/virtual/iommu", "sys/devices/virtual/net", "sys/class/net", "sys/bus/pci", "sys/class/infiniband",
	"sys/class/iommu", "sys/kernel/iommu_groups", "dev/infiniband",
}

// fxWriteHost writes h's generated trees under dir.
func fxWriteHost(t *testing.T, dir string, h fxHost) {
	t.Helper()
	write := func(name string, data []byte) {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(name, target string) {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		// Like kernfs, climb to the target's parent and come back down, so a
		// link to an ancestor still ends in the ancestor's name.
		rel, err := filepath.Rel(filepath.Dir(name), filepath.Dir(target))
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.Join(rel, filepath.Base(target))
		if err := os.Symlink(filepath.ToSlash(rel), full); err != nil {
			t.Fatal(err)
		}
	}
	byAddr := map[string]fxFunction{}
	for _, f := range h.functions {
		byAddr[f.addr] = f
	}
	var devPath func(addr string) string
	devPath = func(addr string) string {
		f := byAddr[addr]
		if f.parent == "" {
			return "sys/devices/pci" + addr[:7] + "/" + addr
		}
		return devPath(f.parent) + "/" + addr
	}
	for _, f := range h.functions {
		p := devPath(f.addr)
		class := fmt.Sprintf("0x%06x\n", f.class)
		if f.rawClass != "" {
			class = f.rawClass
		}
		write(p+"/class", []byte(class))
		write(p+"/vendor", fmt.Appendf(nil, "0x%04x\n", f.vendor))
		write(p+"/device", fmt.Appendf(nil, "0x%04x\n", f.device))
		if f.config != nil {
			write(p+"/config", f.config)
		}
		if f.bar1 != 0 {
			write(p+"/resource", fxResource(f.bar1))
		}
		switch {
		case f.driverFile:
			write(p+"/driver", []byte(f.driver+"\n"))
		case f.driver != "":
			link(p+"/driver", "sys/bus/pci/drivers/"+f.driver)
		}
		if f.group >= 0 {
			link(p+"/iommu_group", "sys/kernel/iommu_groups/"+strconv.Itoa(f.group))
		}
		link("sys/bus/pci/devices/"+f.addr, p)
		for _, ib := range f.ib {
			ibDir := p + "/infiniband/" + ib.name
			link(ibDir+"/device", p)
			link("sys/class/infiniband/"+ib.name, ibDir)
			for i, port := range ib.ports {
				portDir := fmt.Sprintf("%s/ports/%d", ibDir, i+1)
				write(portDir+"/state", []byte(port.state+"\n"))
				write(portDir+"/phys_state", []byte(port.physState+"\n"))
				write(portDir+"/link_layer", []byte(port.linkLayer+"\n"))
				write(portDir+"/rate", []byte(port.rate+"\n"))
			}
		}
	}
	for g, typ := range h.groupTypes {
		write(fmt.Sprintf("sys/kernel/iommu_groups/%d/type", g), []byte(typ+"\n"))
	}
	for _, g := range h.groupTypeDirs {
		write(fmt.Sprintf("sys/kernel/iommu_groups/%d/type/.keep", g), nil)
	}
	for _, u := range h.iommuUnits {
		unit := "sys/devices/virtual/iommu/" + u
		write(unit+"/"+h.iommuKind+"/version", []byte("1:0\n"))
		link("sys/class/iommu/"+u, unit)
	}
	for _, name := range h.devInfiniband {
		write("dev/infiniband/"+name, nil)
	}
	for _, n := range h.nets {
		dir := "sys/devices/virtual/net/" + n.name
		if n.pci != "" {
			dir = devPath(n.pci) + "/net/" + n.name
			link(dir+"/device", devPath(n.pci))
		}
		write(dir+"/operstate", []byte(n.operstate+"\n"))
		write(dir+"/mtu", fmt.Appendf(nil, "%d\n", n.mtu))
		write(dir+"/type", fmt.Appendf(nil, "%d\n", n.typ))
		link("sys/class/net/"+n.name, dir)
	}
}

func TestHardwareFixtures(t *testing.T) {
	for _, h := range fxHosts() {
		t.Run(h.root, func(t *testing.T) {
			committed := filepath.Join("..", "testdata", "hosts", h.root)
			if os.Getenv(regenHWFixturesEnv) == "1" {
				for _, pattern := range fxGeneratedDirs {
					dirs, _ := filepath.Glob(filepath.Join(committed, filepath.FromSlash(pattern)))
					for _, d := range dirs {
						if err := os.RemoveAll(d); err != nil {
							t.Fatal(err)
						}
					}
				}
				fxWriteHost(t, committed, h)
			}
			want := t.TempDir()
			fxWriteHost(t, want, h)
			fxCompareTrees(t, want, committed)
		})
	}
}

// fxCompareTrees checks every file and link under want exists alike under got.
func fxCompareTrees(t *testing.T, want, got string) {
	t.Helper()
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		other := filepath.Join(got, rel)
		if d.Type()&fs.ModeSymlink != 0 {
			wt, _ := os.Readlink(p)
			gt, err := os.Readlink(other)
			if err != nil || gt != wt {
				t.Errorf("%s: link to %q, want %q (%v); regenerate with %s=1", rel, gt, wt, err, regenHWFixturesEnv)
			}
			return nil
		}
		wd, _ := os.ReadFile(p)
		gd, err := os.ReadFile(other)
		if err != nil || !bytes.Equal(gd, wd) {
			t.Errorf("%s differs from the generator (%v); regenerate with %s=1", rel, err, regenHWFixturesEnv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
