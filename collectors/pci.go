package collectors

import (
	"encoding/binary"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const pciDevicesDir = "/sys/bus/pci/devices"

// pciAddressPattern matches a PCI function name in sysfs: domain (four hex
// digits, more behind VMD or Hyper-V), bus, device, function.
var pciAddressPattern = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// Config space layout, from include/uapi/linux/pci_regs.h.
const (
	pciStdHeaderSize   = 64    // what an unprivileged read of config returns
	pciCfgSpaceSize    = 256   // conventional config space
	pciCfgSpaceExpSize = 4096  // PCI Express extended config space
	pciExtCapStart     = 0x100 // first extended capability
	pciExtCapIDACS     = 0x0D  // PCI_EXT_CAP_ID_ACS
	pciACSCtrl         = 0x06  // PCI_ACS_CTRL, from the capability start
)

// ACS control bits (PCI_ACS_SV ... PCI_ACS_DT).
const (
	pciACSSV = 1 << iota
	pciACSTB
	pciACSRR
	pciACSCR
	pciACSUF
	pciACSEC
	pciACSDT
)

// pciConfig is what fleetaudit needs from a function's config space.
type pciConfig struct {
	// Readable is false when the read stopped before the part of config
	// space that would hold ACS.
	Readable bool
	ACS      *snapshot.ACSControl
}

// pciIsExpress says whether the standard capability list holds a PCI
// Express capability (ID 0x10), walked as __pci_find_next_cap_ttl does.
func pciIsExpress(data []byte) bool {
	if len(data) < pciStdHeaderSize || binary.LittleEndian.Uint16(data[0x06:])&0x10 == 0 {
		return false
	}
	pos := int(data[0x34]) &^ 3
	for ttl := 48; ttl > 0 && pos >= pciStdHeaderSize && pos+1 < len(data); ttl-- {
		switch data[pos] {
		case 0x10:
			return true
		case 0xff:
			return false
		}
		pos = int(data[pos+1]) &^ 3
	}
	return false
}

// parsePCIConfig reads a sysfs config file; on error it returns nothing.
// Without CAP_SYS_ADMIN the kernel returns only the first 64 bytes (128 for
// CardBus bridges): that is not an error, only Readable=false. ACS lives in
// PCI Express extended config space, so a PCI Express function needs all
// 4096 bytes, while a conventional one is fully read at 256 and has no ACS.
func parsePCIConfig(data []byte) (pciConfig, error) {
	var cfg pciConfig
	if len(data) < pciStdHeaderSize {
		return cfg, fmt.Errorf("%w: config space is %d bytes, shorter than the %d-byte header", ErrParse, len(data), pciStdHeaderSize)
	}
	if binary.LittleEndian.Uint16(data) == 0xffff {
		return cfg, fmt.Errorf("%w: vendor ID reads 0xffff: the function did not answer", ErrParse)
	}
	if len(data) < pciCfgSpaceSize {
		return cfg, nil
	}
	express := pciIsExpress(data)
	if express && len(data) < pciCfgSpaceExpSize {
		return cfg, nil
	}
	cfg.Readable = true
	if !express {
		return cfg, nil
	}
	// The walk follows pci_find_next_ext_capability, with its bound on the
	// number of capabilities so a looping list ends.
	pos := pciExtCapStart
	for ttl := (pciCfgSpaceExpSize - pciCfgSpaceSize) / 8; ; ttl-- {
		if ttl == 0 {
			return pciConfig{}, fmt.Errorf("%w: extended capability list at 0x%x does not end (loop)", ErrParse, pos)
		}
		if pos+4 > len(data) {
			return pciConfig{}, fmt.Errorf("%w: extended capability at 0x%x lies past the %d bytes read", ErrParse, pos, len(data))
		}
		header := binary.LittleEndian.Uint32(data[pos:])
		if header == 0 || header == 0xffffffff {
			return cfg, nil
		}
		if header&0xffff == pciExtCapIDACS {
			if pos+pciACSCtrl+2 > len(data) {
				return pciConfig{}, fmt.Errorf("%w: ACS capability at 0x%x is cut off", ErrParse, pos)
			}
			ctrl := binary.LittleEndian.Uint16(data[pos+pciACSCtrl:])
			cfg.ACS = &snapshot.ACSControl{
				SourceValidation:   ctrl&pciACSSV != 0,
				TranslationBlock:   ctrl&pciACSTB != 0,
				RequestRedirect:    ctrl&pciACSRR != 0,
				CompletionRedirect: ctrl&pciACSCR != 0,
				UpstreamForwarding: ctrl&pciACSUF != 0,
				EgressControl:      ctrl&pciACSEC != 0,
				DirectTranslated:   ctrl&pciACSDT != 0,
			}
			return cfg, nil
		}
		next := int(header>>20) & 0xffc
		if next == 0 {
			return cfg, nil
		}
		if next < pciExtCapStart {
			return pciConfig{}, fmt.Errorf("%w: extended capability at 0x%x points to 0x%x, inside the conventional header", ErrParse, pos, next)
		}
		pos = next
	}
}

// pciUpstream turns the target of /sys/bus/pci/devices/<addr>, such as
// "../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0",
// into the bridges above the function, nearest first.
func pciUpstream(target string) ([]string, error) {
	parts := strings.Split(target, "/")
	if len(parts) == 0 || !pciAddressPattern.MatchString(parts[len(parts)-1]) {
		return nil, fmt.Errorf("%w: link target %q does not end in a PCI address", ErrParse, hwClip(target))
	}
	var bridges []string
	for _, p := range parts[:len(parts)-1] {
		if pciAddressPattern.MatchString(p) {
			bridges = append(bridges, p)
		}
	}
	slices.Reverse(bridges)
	return bridges, nil
}

// pciKind says why a function belongs in the snapshot, "" when it does not.
func pciKind(class, vendor uint64) string {
	base := class >> 8 // base class and subclass, without the programming interface
	switch {
	case vendor == 0x10de && (base == 0x0300 || base == 0x0302):
		return "gpu"
	case vendor == 0x10de && base == 0x0680:
		return "nvswitch"
	case base == 0x0200 || base == 0x0207:
		return "network"
	}
	return ""
}

// readPCIHex reads a sysfs attribute such as class ("0x030200").
func readPCIHex(c *collection, name string) (string, uint64, bool) {
	text, ok := c.readTrimmed("pci", name)
	if !ok {
		return "", 0, false
	}
	n, err := strconv.ParseUint(text, 0, 32)
	if err != nil || !strings.HasPrefix(text, "0x") {
		c.fail("pci", name, fmt.Errorf("%w: line 1: want a hex number such as 0x10de, got %q", ErrParse, hwClip(text)))
		return "", 0, false
	}
	return strings.ToLower(text), n, true
}

func collectPCI(c *collection) {
	const collector = "pci"
	p := &c.snap.PCI
	p.Devices = map[string]snapshot.PCIDevice{}

	found := map[string]snapshot.PCIDevice{}
	entries := c.readDir(collector, pciDevicesDir)
	for _, e := range entries {
		addr := e.Name()
		if !pciAddressPattern.MatchString(addr) {
			continue
		}
		dir := pciDevicesDir + "/" + addr
		classText, class, ok := readPCIHex(c, dir+"/class")
		if !ok {
			continue
		}
		vendorText, vendor, ok := readPCIHex(c, dir+"/vendor")
		if !ok {
			continue
		}
		kind := pciKind(class, vendor)
		if kind == "" {
			continue
		}
		dev := snapshot.PCIDevice{Kind: kind, Class: classText, Vendor: vendorText}
		if target, ok := hwReadLink(c, collector, dir); ok {
			bridges, err := pciUpstream(target)
			if err != nil {
				c.fail(collector, dir, err)
			}
			dev.Upstream = bridges
		}
		found[addr] = dev
	}
	// Bridges come second so a function that is both keeps its own kind.
	for _, dev := range found {
		for _, b := range dev.Upstream {
			if _, seen := found[b]; !seen {
				found[b] = snapshot.PCIDevice{Kind: "bridge"}
			}
		}
	}

	addrs := make([]string, 0, len(found))
	for addr := range found {
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	for _, addr := range addrs {
		if dev, ok := readPCIFunction(c, addr, found[addr]); ok {
			p.Devices[addr] = dev
		}
	}
	if len(entries) > 0 {
		c.from("pci.config_unreadable", pciDevicesDir, 0)
	}
}

// readPCIFunction completes dev, which may already hold class and vendor,
// with the driver, config space and IOMMU group type.
func readPCIFunction(c *collection, addr string, dev snapshot.PCIDevice) (snapshot.PCIDevice, bool) {
	const collector = "pci"
	dir := pciDevicesDir + "/" + addr
	fact := "pci.devices." + addr
	var ok bool
	if dev.Class == "" {
		if dev.Class, _, ok = readPCIHex(c, dir+"/class"); !ok {
			return dev, false
		}
	}
	if dev.Vendor == "" {
		if dev.Vendor, _, ok = readPCIHex(c, dir+"/vendor"); !ok {
			return dev, false
		}
	}
	dev.Device, _, _ = readPCIHex(c, dir+"/device")
	c.from(fact, dir, 0)

	if target, ok := hwReadLink(c, collector, dir+"/driver"); ok {
		dev.Driver = path.Base(target)
		c.from(fact+".driver", dir+"/driver", 0)
	}
	if data, ok := c.read(collector, dir+"/config"); ok {
		cfg, err := parsePCIConfig(data)
		if err != nil {
			c.fail(collector, dir+"/config", err)
		}
		dev.ConfigReadable, dev.ACS = cfg.Readable, cfg.ACS
		if err == nil && !cfg.Readable {
			c.snap.PCI.ConfigUnreadable++
		}
		c.from(fact+".config_readable", dir+"/config", 0)
		if dev.ACS != nil {
			c.from(fact+".acs", dir+"/config", 0)
		}
	}
	if dev.Kind == "gpu" {
		if data, ok := c.read(collector, dir+"/resource"); ok {
			if size, err := parsePCIResourceSize(data, 1); err != nil {
				c.fail(collector, dir+"/resource", err)
			} else if size > 0 {
				dev.BAR1Bytes = size
				c.from(fact+".bar1_bytes", dir+"/resource", 2)
			}
		}
	}
	// The iommu family reads every group and reports a bad type file.
	if data, err := readCapped(c.src, dir+"/iommu_group/type", c.opts.MaxFileSize); err == nil {
		if typ := strings.TrimSpace(string(data)); typ != "" {
			dev.IOMMUGroupType = typ
			c.from(fact+".iommu_group_type", dir+"/iommu_group/type", 0)
		}
	}
	return dev, true
}
