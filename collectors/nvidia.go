package collectors

import (
	"errors"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

const (
	nvidiaVersionFile = "/proc/driver/nvidia/version"
	nvidiaModuleDir   = "/sys/module/nvidia"
	nvidiaGPUsDir     = "/proc/driver/nvidia/gpus"
	nvswitchDevices   = "/proc/driver/nvidia-nvswitch/devices"
	nvswitchPCIDir    = "/sys/bus/pci/devices"
	dpkgStatusFile    = "/var/lib/dpkg/status"
	fabricManagerBin  = "/usr/bin/nv-fabricmanager"
	// dpkgStatusMaxSize: dpkg's database grows with the package count (a few
	// MB on a full install), past the cap meant for configuration files.
	dpkgStatusMaxSize = 64 << 20
)

// fabricManagerPackage matches the CUDA repository's per-branch packages
// (nvidia-fabricmanager-535) and the unversioned name newer branches use, not
// nvidia-fabricmanager-dev.
var fabricManagerPackage = regexp.MustCompile(`^nvidia-fabricmanager(-\d+)?$`)

func collectNVIDIA(c *collection) {
	nv := &c.snap.NVIDIA
	if pathPresent(c, "nvidia", nvidiaModuleDir) {
		nv.Present = true
		c.from("nvidia.present", nvidiaModuleDir, 0)
	}
	if data, ok := c.read("nvidia", nvidiaVersionFile); ok {
		if !nv.Present {
			nv.Present = true
			c.from("nvidia.present", nvidiaVersionFile, 0)
		}
		v, err := parseNvidiaVersion(data)
		if err != nil {
			c.fail("nvidia", nvidiaVersionFile, err)
		} else {
			nv.DriverVersion, nv.Flavor = v.Version, v.Flavor
			c.from("nvidia.driver_version", nvidiaVersionFile, v.Line)
			c.from("nvidia.flavor", nvidiaVersionFile, v.Line)
			// The module is built for the running kernel's machine, which
			// kernels before 6.1 do not name in /proc/sys/kernel/arch.
			if c.snap.Kernel.Arch == "" && v.Arch != "" {
				c.snap.Kernel.Arch = v.Arch
				c.from("kernel.arch", nvidiaVersionFile, v.Line)
			}
		}
	}
	if v, ok := c.readTrimmed("nvidia", nvidiaModuleDir+"/version"); ok && v != "" {
		nv.ModuleVersion = v
		c.from("nvidia.module_version", nvidiaModuleDir+"/version", 0)
	}
	nv.GPUs = collectGPUs(c)
	collectPersistenceMode(c)
	collectFabricManager(c)
	collectNVSwitches(c)
	if nv.NVMLVersions == nil {
		nv.NVMLVersions = []string{}
	}
}

// pathPresent stats name; a failure other than absence is recorded.
func pathPresent(c *collection, collector, name string) bool {
	_, err := c.src.Stat(rel(name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.fail(collector, name, err)
	}
	return err == nil
}

func collectGPUs(c *collection) []snapshot.GPU {
	gpus := []snapshot.GPU{}
	entries := c.readDir("nvidia", nvidiaGPUsDir)
	for _, e := range entries {
		name := nvidiaGPUsDir + "/" + e.Name() + "/information"
		data, ok := c.read("nvidia", name)
		if !ok {
			continue
		}
		info, errs := parseGPUInformation(data)
		for _, err := range errs {
			c.fail("nvidia", name, err)
		}
		if info.ModelLine == 0 && info.BusLine == 0 {
			continue
		}
		bus := info.BusID
		if bus == "" {
			bus = strings.ToLower(e.Name())
		}
		gpus = append(gpus, snapshot.GPU{BusID: bus, Model: info.Model})
	}
	slices.SortFunc(gpus, func(a, b snapshot.GPU) int { return strings.Compare(a.BusID, b.BusID) })
	if len(entries) > 0 {
		c.from("nvidia.gpus", nvidiaGPUsDir, 0)
	}
	return gpus
}

func collectFabricManager(c *collection) {
	if data, ok := readDpkgStatus(c, "nvidia"); ok {
		pkgs, errs := parseDpkgStatus(data)
		for _, err := range errs {
			c.fail("nvidia", dpkgStatusFile, err)
		}
		var found *dpkgPackage
		for i, p := range pkgs {
			if !fabricManagerPackage.MatchString(p.Package) || !p.Installed() || p.Version == "" {
				continue
			}
			// Branch packages conflict with each other; should two be
			// installed anyway, report the newer.
			if found == nil || compareDottedVersions(p.UpstreamVersion(), found.UpstreamVersion()) > 0 {
				found = &pkgs[i]
			}
		}
		if found != nil {
			c.snap.NVIDIA.FabricManager = found.UpstreamVersion()
			c.from("nvidia.fabric_manager", dpkgStatusFile, found.VersionLine)
			return
		}
	}
	// RPM hosts, or a tarball install: the binary says it is there, not which
	// version.
	if pathPresent(c, "nvidia", fabricManagerBin) {
		c.snap.NVIDIA.FabricManager = "unknown"
		c.from("nvidia.fabric_manager", fabricManagerBin, 0)
	}
}

// readDpkgStatus is c.read with a cap sized for dpkg's database.
func readDpkgStatus(c *collection, collector string) ([]byte, bool) {
	limit := max(c.opts.MaxFileSize, dpkgStatusMaxSize)
	data, err := readCapped(c.src, dpkgStatusFile, limit)
	if err == nil {
		return data, true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		c.fail(collector, dpkgStatusFile, err)
	}
	return nil, false
}

func collectNVSwitches(c *collection) {
	nv := &c.snap.NVIDIA
	// The nvswitch part of nvidia.ko lists every switch it drives here (the
	// directory fabric manager's unit waits on).
	if pathPresent(c, "nvidia", nvswitchDevices) {
		nv.NVSwitches = len(c.readDir("nvidia", nvswitchDevices))
		c.from("nvidia.nvswitches", nvswitchDevices, 0)
		return
	}
	// Without that driver, count NVIDIA functions of class 0x0680 ("Bridge:
	// other"), which is how NVSwitches enumerate on the PCI bus.
	entries := c.readDir("nvidia", nvswitchPCIDir)
	count := 0
	for _, e := range entries {
		dev := nvswitchPCIDir + "/" + e.Name()
		vendor, ok := c.readTrimmed("nvidia", dev+"/vendor")
		if !ok || !strings.EqualFold(vendor, "0x10de") {
			continue
		}
		class, ok := c.readTrimmed("nvidia", dev+"/class")
		if ok && strings.HasPrefix(strings.ToLower(class), "0x0680") {
			count++
		}
	}
	if len(entries) > 0 {
		nv.NVSwitches = count
		c.from("nvidia.nvswitches", nvswitchPCIDir, 0)
	}
}
