package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const netClassDir = "/sys/class/net"

// parseNetInt reads a one-number sysfs attribute of a network interface
// (mtu, type), as the kernel prints it: a decimal and a newline.
func parseNetInt(text string) (int, error) {
	t := strings.TrimSpace(text)
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || t == "" || t[0] == '+' {
		return 0, fmt.Errorf("%w: line 1: want a non-negative integer, got %q", ErrParse, hwClip(t))
	}
	return n, nil
}

// parseOperState reads /sys/class/net/<if>/operstate: one lower-case word
// of RFC 2863 (operstates[] in net/core/net-sysfs.c).
func parseOperState(text string) (string, error) {
	t := strings.TrimSpace(text)
	switch t {
	case "unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up":
		return t, nil
	}
	return "", fmt.Errorf("%w: line 1: not an operstate: %q", ErrParse, hwClip(t))
}

// collectNet reads /sys/class/net after the RDMA devices, so an interface
// on the PCI function of an RDMA device is marked as facing the fabric.
func collectNet(c *collection) {
	const collector = "net"
	n := &c.snap.Net
	n.Interfaces = map[string]snapshot.NetInterface{}
	if _, err := c.src.ReadDir(rel(netClassDir)); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.fail(collector, netClassDir, err)
		}
		return
	}
	n.Present = true
	c.from("net.present", netClassDir, 0)

	rdmaByPCI := map[string][]string{}
	for name, d := range c.snap.RDMA.Devices {
		if d.PCIAddress != "" {
			rdmaByPCI[d.PCIAddress] = append(rdmaByPCI[d.PCIAddress], name)
		}
	}
	for _, e := range c.readDir(collector, netClassDir) {
		name := e.Name()
		dir := netClassDir + "/" + name
		fact := "net.interfaces." + name
		var ifc snapshot.NetInterface
		if text, ok := c.readTrimmed(collector, dir+"/operstate"); ok {
			if st, err := parseOperState(text); err != nil {
				c.fail(collector, dir+"/operstate", err)
			} else {
				ifc.OperState = st
				c.from(fact+".operstate", dir+"/operstate", 0)
			}
		}
		for _, attr := range []struct {
			file string
			to   *int
		}{{"mtu", &ifc.MTU}, {"type", &ifc.Type}} {
			text, ok := c.readTrimmed(collector, dir+"/"+attr.file)
			if !ok {
				continue
			}
			v, err := parseNetInt(text)
			if err != nil {
				c.fail(collector, dir+"/"+attr.file, err)
				continue
			}
			*attr.to = v
			c.from(fact+"."+attr.file, dir+"/"+attr.file, 0)
		}
		if target, ok := hwReadLink(c, collector, dir+"/device"); ok && pciAddressPattern.MatchString(path.Base(target)) {
			ifc.PCIAddress = path.Base(target)
			c.from(fact+".pci_address", dir+"/device", 0)
			if devs := rdmaByPCI[ifc.PCIAddress]; len(devs) > 0 {
				ifc.RDMA = slices.Sorted(slices.Values(devs))
				c.from(fact+".rdma", dir+"/device", 0)
			}
		}
		n.Interfaces[name] = ifc
		c.from(fact, dir, 0)
	}
}
