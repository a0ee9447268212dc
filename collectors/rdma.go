package collectors

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const (
	infinibandClassDir = "/sys/class/infiniband"
	infinibandDevDir   = "/dev/infiniband"
)

// parseIBPortState reads a port's state file, which the kernel prints as
// "%d: %s" ("4: ACTIVE").
func parseIBPortState(text string) (code int, name string, err error) {
	text = strings.TrimSpace(text)
	num, name, ok := strings.Cut(text, ": ")
	code, convErr := strconv.Atoi(num)
	name = strings.TrimSpace(name)
	if !ok || convErr != nil || name == "" {
		return 0, "", fmt.Errorf("%w: line 1: want \"<code>: <NAME>\", got %q", ErrParse, hwClip(text))
	}
	return code, name, nil
}

// parseIBPortRate reads a port's rate file ("400 Gb/sec (4X NDR)",
// "2.5 Gb/sec (1X)") and returns the Gb/s number.
func parseIBPortRate(text string) (float64, error) {
	text = strings.TrimSpace(text)
	num, _, ok := strings.Cut(text, " Gb/sec")
	gbps, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || gbps < 0 || num != strings.TrimSpace(num) {
		return 0, fmt.Errorf("%w: line 1: want \"<n> Gb/sec (...)\", got %q", ErrParse, hwClip(text))
	}
	return gbps, nil
}

func collectRDMA(c *collection) {
	const collector = "rdma"
	r := &c.snap.RDMA
	r.Devices = map[string]snapshot.RDMADevice{}
	r.DevFiles = []string{}

	for _, e := range c.readDir(collector, infinibandClassDir) {
		name := e.Name()
		dir := infinibandClassDir + "/" + name
		fact := "rdma.devices." + name
		dev := snapshot.RDMADevice{Ports: map[string]snapshot.RDMAPort{}}
		// device is a link to the PCI function (or other parent) and
		// device/driver a link to the driver that binds it.
		if target, ok := hwReadLink(c, collector, dir+"/device/driver"); ok {
			dev.Driver = path.Base(target)
			c.from(fact+".driver", dir+"/device/driver", 0)
		}
		if target, ok := hwReadLink(c, collector, dir+"/device"); ok && pciAddressPattern.MatchString(path.Base(target)) {
			dev.PCIAddress = path.Base(target)
			c.from(fact+".pci_address", dir+"/device", 0)
		}
		for _, p := range c.readDir(collector, dir+"/ports") {
			if _, err := strconv.Atoi(p.Name()); err != nil {
				continue
			}
			dev.Ports[p.Name()] = readIBPort(c, dir+"/ports/"+p.Name(), fact+".ports."+p.Name())
		}
		r.Devices[name] = dev
		c.from(fact, dir, 0)
	}

	for _, e := range c.readDir(collector, infinibandDevDir) {
		r.DevFiles = append(r.DevFiles, e.Name())
	}
	if len(r.DevFiles) > 0 {
		c.from("rdma.dev_files", infinibandDevDir, 0)
	}
}

// hwReadLink returns a symbolic link's target. A missing link is no error;
// anything else (a file where sysfs has a link) is recorded.
func hwReadLink(c *collection, collector, name string) (string, bool) {
	target, err := c.src.ReadLink(rel(name))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.fail(collector, name, err)
		}
		return "", false
	}
	return target, true
}

func readIBPort(c *collection, dir, fact string) snapshot.RDMAPort {
	const collector = "rdma"
	var port snapshot.RDMAPort
	if text, ok := c.readTrimmed(collector, dir+"/state"); ok {
		code, name, err := parseIBPortState(text)
		if err != nil {
			c.fail(collector, dir+"/state", err)
		} else {
			port.State, port.StateCode = name, code
			c.from(fact+".state", dir+"/state", 0)
			c.from(fact+".state_code", dir+"/state", 0)
		}
	}
	if text, ok := c.readTrimmed(collector, dir+"/link_layer"); ok && text != "" {
		port.LinkLayer = text
		c.from(fact+".link_layer", dir+"/link_layer", 0)
	}
	if text, ok := c.readTrimmed(collector, dir+"/rate"); ok {
		gbps, err := parseIBPortRate(text)
		if err != nil {
			c.fail(collector, dir+"/rate", err)
		} else {
			port.Rate, port.RateGbps = text, gbps
			c.from(fact+".rate", dir+"/rate", 0)
			c.from(fact+".rate_gbps", dir+"/rate", 0)
		}
	}
	return port
}
