package safeio

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing n bytes of f at off to disk and does not
// wait: a hint, whose errors the fsync after it reports.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
