package collectors

import (
	"slices"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// family is one fact family, registered once in families: everything else
// that depends on a family is derived from this entry.
//
//   - name files the family's errors (snapshot.CollectionError.Collector).
//   - writes are the fact paths it sets (sections, or facts below one) and
//     records the provenance of. An error it files leaves all of them
//     partly unread: policies' coverage reads Writes, so a family writing
//     into another's section (processes into nvidia.persistenced) is
//     covered. A family writing nothing but snapshot.RunningState is not
//     run on an offline image.
//   - reads are the paths under the root it reads, as path.Match patterns;
//     one ending in "/" is a directory it lists. sshsource checks that its
//     stream carries every one, so a remote host needs no fetch for them.
//   - run collects.
type family struct {
	name   string
	writes []string
	reads  []string
	run    func(*collection)
}

// families run in this order: later ones may read facts earlier ones set
// (logind's default depends on the OS, IOMMU passthrough on the cmdline).
var families = []family{
	{name: "os", writes: []string{"os"}, run: collectOS},
	{name: "kernel", writes: []string{"kernel"}, run: collectKernel},
	{name: "boot", writes: []string{"boot"}, run: collectBoot},
	{name: "sysctl", writes: []string{"sysctl"}, run: collectSysctl},
	{name: "limits", writes: []string{"limits"}, run: collectLimits},
	{name: "logind", writes: []string{"logind"}, run: collectLogind},
	// kernel.arch from the driver's banner on kernels before 6.1.
	{name: "nvidia", writes: []string{"nvidia", "kernel.arch"}, run: collectNVIDIA},
	{name: "modules", writes: []string{"modules"}, run: collectModules},
	// nccl_config before libraries: the login LD_LIBRARY_PATH and
	// NCCL_NET_PLUGIN decide where NCCL finds its net plugin.
	{name: "nccl_config", writes: []string{"nccl_config"}, run: collectNCCLConfig},
	{name: "libraries", writes: []string{"libraries", "nvidia.nvml_versions"}, run: collectLibraries},
	{name: "memory", writes: []string{"memory"}, run: collectMemory},
	{name: "rdma", writes: []string{"rdma"}, run: collectRDMA},
	{name: "iommu", writes: []string{"iommu"}, run: collectIOMMU},
	{name: "pci", writes: []string{"pci"}, run: collectPCI},
	{name: "net", writes: []string{"net"}, run: collectNet},
	{name: "services", writes: []string{"services"}, run: collectServices},
	{name: "firewall", writes: []string{"firewall"}, run: collectFirewall},
	{name: "dmi", writes: []string{"dmi"}, run: collectDMI},
	{name: "processes", writes: []string{"nvidia.persistenced"}, run: collectProcesses},
	{name: "pods", writes: []string{"pods"}, run: collectPods},
}

// running reports whether the family reads nothing but running state: an
// offline image has none, so it is not run there.
func (f family) running() bool {
	for _, w := range f.writes {
		if !snapshot.IsRunningState(w) {
			return false
		}
	}
	return true
}

// Family is a fact family as the packages around collectors see it.
type Family struct {
	// Name is what the family's errors are filed under.
	Name string
	// Writes are the fact paths it sets; an error it files leaves them
	// partly unread.
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
		out[i] = Family{Name: f.name, Writes: slices.Clone(f.writes), Reads: slices.Clone(f.reads), Running: f.running()}
	}
	return out
}

// Writes lists the fact paths the family named collector writes (what an
// error filed under that name leaves partly unread); nil for a name that
// is no family.
func Writes(collector string) []string {
	for _, f := range families {
		if f.name == collector {
			return slices.Clone(f.writes)
		}
	}
	return nil
}
