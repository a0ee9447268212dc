package collectors

import (
	"errors"
	"io/fs"
)

// IsImage reports whether the tree under src is an offline OS image rather
// than a running host: nothing is mounted on /proc (it is absent, or the
// empty directory base-files ships as the mount point). A running Linux host
// always has procfs there. Only a transport reading a directory that may be
// an image asks (Local); a live transport (SSH) never does, so a /proc
// missing there stays an error.
func IsImage(src Source) bool {
	if _, err := src.ReadDir("."); err != nil {
		return false // not read at all: Collect reports that instead
	}
	entries, err := src.ReadDir("proc")
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && len(entries) == 0
}
