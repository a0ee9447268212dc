package collectors

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
)

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
	for _, e := range c.readDir(collector, "/proc") {
		// A host may run a hundred thousand processes.
		if c.ctx.Err() != nil {
			return
		}
		if _, err := strconv.ParseUint(e.Name(), 10, 64); err != nil {
			continue
		}
		name := "/proc/" + e.Name() + "/comm"
		data, err := readCapped(c.src, name, c.opts.MaxFileSize)
		if err != nil {
			// Processes exit mid-scan (ENOENT, or ESRCH from a dying
			// task); that, or a hidden process, is no error.
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.ESRCH) {
				c.fail(collector, name, err)
				failed = true
			}
			continue
		}
		scanned++
		if isPersistencedComm(string(data)) {
			c.snap.NVIDIA.Persistenced = true
			c.from("nvidia.persistenced", name, 0)
			return
		}
	}
	// A comm that could not be read may have been nvidia-persistenced's:
	// then its absence is not known, and no default backs the false.
	if _, set := c.snap.Sources["nvidia.persistenced"]; scanned > 0 && !failed && !set {
		c.defaulted("nvidia.persistenced", "no nvidia-persistenced process in /proc")
	}
}
