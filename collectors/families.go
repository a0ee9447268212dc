package collectors

import (
	"slices"

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
//   - reads are the paths under the root it reads, as path.Match patterns;
//     one ending in "/" is a directory it lists. sshsource checks that its
//     stream carries every one, so a remote host needs no fetch for them.
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
	{name: "os", run: collectOS},
	{name: "kernel", run: collectKernel},
	{name: "boot", run: collectBoot},
	{name: "sysctl", run: collectSysctl},
	{name: "limits", run: collectLimits},
	{name: "logind", run: collectLogind},
	{name: "nvidia", run: collectNVIDIA},
	{name: "modules", run: collectModules},
	// nccl_config before libraries: the login LD_LIBRARY_PATH and
	// NCCL_NET_PLUGIN decide where NCCL finds its net plugin.
	{name: "nccl_config", run: collectNCCLConfig},
	{name: "libraries", run: collectLibraries},
	{name: "memory", run: collectMemory},
	{name: "rdma", run: collectRDMA},
	{name: "iommu", run: collectIOMMU},
	{name: "pci", run: collectPCI},
	{name: "net", run: collectNet},
	{name: "services", run: collectServices},
	{name: "firewall", run: collectFirewall},
	{name: "dmi", run: collectDMI},
	{name: "processes", run: collectProcesses},
	{name: "pods", run: collectPods},
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
