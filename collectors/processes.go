package collectors

import "strings"

// persistencedComm is nvidia-persistenced as /proc/<pid>/comm shows it: the
// kernel keeps TASK_COMM_LEN-1 = 15 bytes of a task's name.
const persistencedComm = "nvidia-persiste"

// isPersistencedComm matches the truncated name, and the full one a source
// that does not truncate may show.
func isPersistencedComm(comm string) bool {
	comm = strings.TrimSpace(comm)
	return comm == persistencedComm || comm == "nvidia-persistenced"
}

func collectProcesses(c *collection) {
	const collector = "processes"
	scanned, failed := 0, false
	if !c.opts.ConfigOnly && !c.snap.Source.Image && c.missing("/proc") {
		// A live root without /proc: whether nvidia-persistenced runs is
		// unknown, not "no". Said, so that coverage withholds the false.
		c.fail(collector, "/proc", errRunningStateUnknown)
		return
	}
	scan := c.procs()
	if scan.listErr != nil {
		c.fail(collector, "/proc", scan.listErr)
	}
	for _, p := range scan.procs {
		if p.err != nil {
			c.fail(collector, p.name, p.err)
			failed = true
			continue
		}
		if p.gone {
			continue
		}
		scanned++
		if isPersistencedComm(p.comm) {
			c.snap.NVIDIA.Persistenced = true
			c.from("nvidia.persistenced", p.name, 0)
			return
		}
	}
	if scan.stopped {
		return
	}
	// A comm that could not be read may have been nvidia-persistenced's:
	// then its absence is not known, and no default backs the false.
	if _, set := c.snap.Sources["nvidia.persistenced"]; scanned > 0 && !failed && !set {
		c.defaulted("nvidia.persistenced", "no nvidia-persistenced process in /proc")
	}
}
