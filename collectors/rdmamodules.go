package collectors

import "path"

// rdma-core loads the lists in /etc/rdma/modules itself, not at boot:
// rdma-load-modules@.service runs "systemd-modules-load
// /etc/rdma/modules/%I.conf", which reads the file as a modules-load.d
// file. Its instances are wanted when udev finds RDMA hardware
// (rdma-core 44.0, kernel-boot/: rdma-hw.target wants @rdma for any
// device of the infiniband subsystem; 90-rdma-ulp-modules.rules wants
// @infiniband, @iwarp, @opa and @roce by the driver's class, which
// 75-rdma-description.rules sets; iwpmd.service wants @iwpmd; udev.md,
// "Kernel Module Loading"). A list of another name is loaded by nothing.
const (
	rdmaModulesDir = "/etc/rdma/modules"
	rdmaLoadUnit   = "rdma-load-modules@.service"
)

// rdmaModuleLists are the instances rdma-core's units and rules start, in
// file-name order.
var rdmaModuleLists = []string{"infiniband", "iwarp", "iwpmd", "opa", "rdma", "roce"}

// rdmaModuleFiles are the lists' paths.
func rdmaModuleFiles() []string {
	out := make([]string, len(rdmaModuleLists))
	for i, l := range rdmaModuleLists {
		out[i] = path.Join(rdmaModulesDir, l+".conf")
	}
	return out
}

// collectRDMAModules reads rdma-core's module lists into configure: a
// module listed there loads once the host's RDMA hardware appears. Without
// rdma-core's loader unit (not installed, or masked) the lists are
// leftovers that nothing reads; a config repo carries no units, so there
// the lists count as they are.
func collectRDMAModules(c *collection, configure func(string, []configuredModule)) {
	if !c.opts.ConfigOnly {
		unit, ok := c.firstExisting(unitPaths(rdmaLoadUnit))
		if !ok || c.realPath(unit) == "/dev/null" {
			return
		}
	}
	for _, file := range rdmaModuleFiles() {
		data, ok := c.read("modules", file)
		if !ok {
			continue
		}
		mods, errs := parseModulesLoadD(data)
		for _, err := range errs {
			c.skipped("modules", file, err)
		}
		configure(file, mods)
	}
}
