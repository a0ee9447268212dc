package collectors

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

const (
	iommuClassDir      = "/sys/class/iommu"
	iommuGroupsDir     = "/sys/kernel/iommu_groups"
	cpuinfoPath        = "/proc/cpuinfo"
	hypervisorTypePath = "/sys/hypervisor/type"
)

// iommuDomainTranslates says whether a group's default domain type (as
// iommu_group_show_type prints it) translates DMA; types missing here
// ("blocked", "unmanaged", "unknown") say nothing about the default mode.
var iommuDomainTranslates = map[string]bool{
	"identity": false,
	"DMA":      true,
	"DMA-FQ":   true,
	"DMA-SQ":   true,
}

// cpuinfoFlagLine returns the line of the first "flags" line of
// /proc/cpuinfo (x86) that lists flag, 0 when none does.
func cpuinfoFlagLine(data []byte, flag string) int {
	for i, raw := range bytes.Split(data, []byte("\n")) {
		key, value, ok := strings.Cut(string(raw), ":")
		if !ok || strings.TrimSpace(key) != "flags" {
			continue
		}
		for _, f := range strings.Fields(value) {
			if f == flag {
				return i + 1
			}
		}
	}
	return 0
}

// kernelBool is the kernel's kstrtobool: y/Y/1 and on are true, n/N/0 and
// off false; only the first one or two characters count.
func kernelBool(s string) (bool, bool) {
	if s == "" {
		return false, false
	}
	switch s[0] {
	case 'y', 'Y', '1':
		return true, true
	case 'n', 'N', '0':
		return false, true
	case 'o', 'O':
		if len(s) > 1 {
			switch s[1] {
			case 'n', 'N':
				return true, true
			case 'f', 'F':
				return false, true
			}
		}
	}
	return false, false
}

// cmdlinePassthrough applies iommu= (x86: a comma list where "pt" and
// "nopt" choose) and iommu.passthrough= in command-line order, the last one
// winning as the kernel's early_param handlers do. set is false when neither
// says anything; bad lists the values the kernel would reject.
func cmdlinePassthrough(params []string) (passthrough, set bool, bad []string) {
	for _, p := range params {
		name, value, _ := strings.Cut(p, "=")
		switch name {
		case "iommu":
			for _, opt := range strings.Split(value, ",") {
				switch opt {
				case "pt":
					passthrough, set = true, true
				case "nopt":
					passthrough, set = false, true
				}
			}
		case "iommu.passthrough":
			v, ok := kernelBool(value)
			if !ok {
				bad = append(bad, p)
				continue
			}
			passthrough, set = v, true
		}
	}
	return passthrough, set, bad
}

// runningIOMMUParams lists the running cmdline's iommu params in order. The
// raw cmdline keeps their order; the params map is the fallback.
func runningIOMMUParams(c *collection) []string {
	running := c.snap.Boot.Running
	var params []string
	if running.Cmdline != "" {
		for _, f := range strings.Fields(running.Cmdline) {
			if strings.HasPrefix(f, "iommu=") || strings.HasPrefix(f, "iommu.passthrough=") {
				params = append(params, f)
			}
		}
		return params
	}
	for _, name := range []string{"iommu", "iommu.passthrough"} {
		if v, ok := running.Params[name]; ok {
			params = append(params, name+"="+v)
		}
	}
	return params
}

func collectIOMMU(c *collection) {
	const collector = "iommu"
	m := &c.snap.IOMMU
	m.Units = []string{}
	m.GroupTypes = map[string]int{}

	for _, e := range c.readDir(collector, iommuClassDir) {
		m.Units = append(m.Units, e.Name())
	}
	m.Enabled = len(m.Units) > 0
	if m.Enabled {
		c.from("iommu.enabled", iommuClassDir, 0)
		c.from("iommu.units", iommuClassDir, 0)
	}

	identity, translating := 0, 0
	for _, e := range c.readDir(collector, iommuGroupsDir) {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		typ, ok := c.readTrimmed(collector, iommuGroupsDir+"/"+e.Name()+"/type")
		if !ok || typ == "" {
			continue
		}
		m.GroupTypes[typ]++
		if translates, known := iommuDomainTranslates[typ]; known {
			if translates {
				translating++
			} else {
				identity++
			}
		}
	}
	if len(m.GroupTypes) > 0 {
		c.from("iommu.group_types", iommuGroupsDir, 0)
	}

	params := runningIOMMUParams(c)
	cmdPT, cmdSet, bad := cmdlinePassthrough(params)
	for _, p := range bad {
		c.fail(collector, "/proc/cmdline", fmt.Errorf("%w: %s is not a boolean; the kernel ignores it", ErrParse, p))
	}
	var evidence string
	switch {
	case identity+translating > 0:
		// What the groups use beats what the cmdline asked for: the kernel
		// config default, and devices the kernel forces to translate, show here.
		m.Passthrough = identity > translating
		m.PassthroughEvidence, evidence = "iommu_groups", iommuGroupsDir
	case cmdSet:
		m.Passthrough = cmdPT
		m.PassthroughEvidence, evidence = "cmdline", "/proc/cmdline"
	default:
		c.defaulted("iommu.passthrough", "no IOMMU group types and no iommu=pt or iommu.passthrough= on the running cmdline")
	}
	if evidence != "" {
		c.from("iommu.passthrough", evidence, 0)
		c.from("iommu.passthrough_evidence", evidence, 0)
	}

	collectHypervisor(c)
}

func collectHypervisor(c *collection) {
	const collector = "iommu"
	if data, ok := c.read(collector, cpuinfoPath); ok {
		if line := cpuinfoFlagLine(data, "hypervisor"); line > 0 {
			c.snap.IOMMU.Hypervisor = true
			c.from("iommu.hypervisor", cpuinfoPath, 0)
			return
		}
	}
	// Xen guests (and dom0) have /sys/hypervisor/type; the directory alone
	// exists on any kernel built with CONFIG_SYS_HYPERVISOR.
	if typ, ok := c.readTrimmed(collector, hypervisorTypePath); ok && typ != "" {
		c.snap.IOMMU.Hypervisor = true
		c.from("iommu.hypervisor", hypervisorTypePath, 0)
		return
	}
	c.defaulted("iommu.hypervisor", "no hypervisor flag in "+cpuinfoPath+" and no "+hypervisorTypePath)
}
