// Package safeio opens and reads input files without trusting them to be
// regular files: a FIFO is never waited on, a device never read without a
// cap, and what is read is bounded whatever stat says about the size.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped when a path names something other than a regular
// file (a FIFO, socket, device, or directory), after symbolic links.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped when a file holds more than the cap allows.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading only if it is a regular file. The open itself
// never blocks (O_NONBLOCK, so a FIFO swapped in after a stat cannot hang
// it), and the type is checked on the open descriptor, so there is no window
// between the check and the use.
func Open(path string) (*os.File, error) { return open(path, false) }

func open(path string, dirOK bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := info.Mode(); !m.IsRegular() && !(dirOK && m.IsDir()) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(m))}
	}
	return f, nil
}

// ReadFile reads a regular file of at most max bytes (max <= 0: no cap).
// Sizes are not taken from stat, which /proc and /sys report as 0 or 4096.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, max)
}

// ReadAll reads r to EOF, failing with ErrTooLarge past max bytes (max <= 0:
// no cap). name is used in the error.
func ReadAll(r io.Reader, name string, max int64) ([]byte, error) {
	if max <= 0 {
		return io.ReadAll(r)
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: over the %d byte limit", ErrTooLarge, max)}
	}
	return b, nil
}

// Kind names a file type for messages: "FIFO", "character device", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}
