package collectors

import (
	"path"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// family is one fact family, registered once in families: everything else
// that depends on a family is derived from this entry.
//
//   - name files the family's errors (snapshot.CollectionError.Collector).
//   - the fact paths it sets (sections, or facts below one) and records
//     the provenance of are snapshot.FamilyWrites(name), beside the
//     sections they lie in: policies' coverage, which cannot import this
//     package, reads them there. An error the family files leaves all of
//     them partly unread. A family writing nothing but
//     snapshot.RunningState is not run on an offline image.
//   - reads are the paths under the root it opens, as path.Match patterns;
//     one ending in "/" is a directory it lists, one ending in "/**" a tree
//     it scans as it finds it. A test holds each family to them on every
//     fixture host, and sshsource's test that its stream carries every one,
//     so a remote host needs no fetch for them.
//   - run collects.
type family struct {
	name  string
	reads []string
	run   func(*collection)
}

func (f family) writes() []string { return snapshot.FamilyWrites(f.name) }

// families run in this order: later ones may read facts earlier ones set
// (logind's default depends on the OS, IOMMU passthrough on the cmdline).
var families = []family{
	{name: "os", run: collectOS, reads: osReleaseFiles},
	// An image's installed kernels: /boot and /lib/modules listed.
	{name: "kernel", run: collectKernel, reads: []string{"/proc/sys/kernel/arch", "/proc/sys/kernel/osrelease", "/proc/sys/kernel/version", bootDir + "/", modulesRoot + "/"}},
	{name: "boot", run: collectBoot, reads: slices.Concat(
		[]string{procCmdline, grubDefaultFile, grubDefaultDir + "/", grubDefaultDir + "/*", blsEntriesDir + "/", blsEntriesDir + "/*",
			grubenvFile, debianGrubenvFile, efiDir + "/", efiDir + "/*/grub.cfg", efivarsDir + "/Loader*"},
		kernelCmdlineFiles, grubCfgFiles,
		under(sdBootRoots, "/loader/loader.conf", "/loader/entries/", "/loader/entries/*", "/EFI/systemd/"))},
	{name: "sysctl", run: collectSysctl, reads: slices.Concat(
		[]string{"/etc/sysctl.conf", "/proc/sys/**"},
		under(sysctlDirs, "/", "/*"))},
	{name: "limits", run: collectLimits, reads: []string{"/etc/security/limits.conf", "/etc/security/limits.d/", "/etc/security/limits.d/*"}},
	{name: "logind", run: collectLogind, reads: slices.Concat(logindMainFiles, under(logindDropinDirs, "/", "/*"))},
	{name: "nvidia", run: collectNVIDIA, reads: []string{
		"/proc/driver/nvidia/version", "/proc/driver/nvidia/gpus/", "/proc/driver/nvidia/gpus/*/information",
		"/proc/driver/nvidia-nvswitch/devices/", "/proc/driver/nvidia-nvswitch/devices/*",
		"/sys/module/nvidia/version", "/sys/bus/pci/devices/", "/sys/bus/pci/devices/*/class", "/sys/bus/pci/devices/*/vendor",
		"/var/lib/dpkg/status"}},
	{name: "modules", run: collectModules, reads: slices.Concat(
		[]string{"/proc/modules", "/etc/modules"},
		under(modulesLoadDirs, "/", "/*"), under(modprobeDirs, "/", "/*"),
		rdmaModuleFiles(), under(systemUnitDirs, "/"+rdmaLoadUnit))},
	// nccl_config before libraries: the login LD_LIBRARY_PATH and
	// NCCL_NET_PLUGIN decide where NCCL finds its net plugin.
	{name: "nccl_config", run: collectNCCLConfig, reads: []string{"/etc/environment", "/etc/nccl.conf", "/etc/profile.d/", "/etc/profile.d/*"}},
	// The directories ld.so.conf names, and what lies below the scanned
	// trees ("**"), are found as the scan goes.
	{name: "libraries", run: collectLibraries, reads: []string{
		"/etc/ld.so.conf", "/etc/ld.so.conf.d/", "/etc/ld.so.conf.d/*",
		"/lib/**", "/lib64/**", "/usr/lib/**", "/usr/lib64/**", "/usr/local/**", "/opt/**"}},
	{name: "memory", run: collectMemory, reads: []string{"/proc/meminfo", "/sys/kernel/mm/transparent_hugepage/enabled"}},
	{name: "rdma", run: collectRDMA, reads: []string{"/dev/infiniband/", "/sys/class/infiniband/", "/sys/class/infiniband/*/ports/", "/sys/class/infiniband/*/ports/*/*"}},
	{name: "iommu", run: collectIOMMU, reads: []string{"/proc/cpuinfo", "/sys/hypervisor/type", "/sys/class/iommu/", "/sys/kernel/iommu_groups/", "/sys/kernel/iommu_groups/*/type"}},
	{name: "pci", run: collectPCI, reads: []string{"/sys/bus/pci/devices/", "/sys/bus/pci/devices/*/*", "/sys/bus/pci/devices/*/iommu_group/type"}},
	{name: "net", run: collectNet, reads: []string{"/sys/class/net/", "/sys/class/net/*/*"}},
	{name: "services", run: collectServices, reads: slices.Concat(
		[]string{"/proc/", "/proc/[0-9]*/comm", "/proc/[0-9]*/limits"},
		under(systemConfDirs, "/system.conf", "/system.conf.d/", "/system.conf.d/*"),
		under(systemUnitDirs, "/service.d/", "/service.d/*"),
		under(systemUnitDirs, unitFiles(func() []string { u, _ := JobServiceNames(); return u }())...))},
	{name: "firewall", run: collectFirewall, reads: slices.Concat(
		[]string{"/etc/default/ufw", "/etc/ufw/ufw.conf", "/etc/ufw/user.rules", "/etc/ufw/user6.rules", "/etc/ufw/before.rules", "/etc/ufw/before6.rules",
			"/etc/firewalld/firewalld.conf", "/etc/firewalld/zones/", "/etc/firewalld/zones/*.xml", "/usr/lib/firewalld/zones/", "/usr/lib/firewalld/zones/*.xml", "/etc/nftables.conf", "/etc/sysconfig/nftables.conf", "/etc/nftables/*"},
		[]string{"/etc/systemd/system/"},
		under(systemUnitDirs, unitFiles(FirewallUnits())...))},
	{name: "dmi", run: collectDMI, reads: []string{"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"}},
	{name: "processes", run: collectProcesses, reads: []string{"/proc/", "/proc/[0-9]*/comm"}},
	{name: "pods", run: collectPods},
}

// systemConfDirs are where the services family reads system.conf.
var systemConfDirs = []string{"/etc/systemd", "/run/systemd", "/usr/local/lib/systemd", "/usr/lib/systemd"}

// unitFiles are units and their drop-ins, under a unit directory.
func unitFiles(units []string) []string {
	var out []string
	for _, u := range units {
		out = append(out, "/"+u, "/"+u+".d/", "/"+u+".d/*")
	}
	return out
}

// under lists each of names under each of dirs.
func under(dirs []string, names ...string) []string {
	var out []string
	for _, d := range dirs {
		for _, n := range names {
			out = append(out, d+n)
		}
	}
	return out
}

// readsPath reports whether the family declares name (a path under the
// root, "/etc/x"; a directory listed as such ends in "/") among its reads.
func (f family) readsPath(name string) bool {
	for _, p := range f.reads {
		if base, ok := strings.CutSuffix(p, "/**"); ok {
			if name == base || name == base+"/" || strings.HasPrefix(name, base+"/") {
				return true
			}
			continue
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// running reports whether the family reads nothing but running state: an
// offline image has none, so it is not run there.
func (f family) running() bool {
	writes := f.writes()
	for _, w := range writes {
		if !snapshot.IsRunningState(w) {
			return false
		}
	}
	return len(writes) > 0
}

// Family is a fact family as the packages around collectors see it.
type Family struct {
	// Name is what the family's errors are filed under.
	Name string
	// Writes are the fact paths it sets (snapshot.FamilyWrites).
	Writes []string
	// Reads are the paths under the root it reads (path.Match patterns; a
	// directory it lists ends in "/").
	Reads []string
	// Running: it reads only running state, and is not run on an image.
	Running bool
}

// Families lists the fact families in the order Collect runs them.
func Families() []Family {
	out := make([]Family, len(families))
	for i, f := range families {
		out[i] = Family{Name: f.name, Writes: f.writes(), Reads: slices.Clone(f.reads), Running: f.running()}
	}
	return out
}
