package safeio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WriteOutput writes what render writes to the file name, so a reader never
// sees half of it. What is written depends on what name is:
//   - a regular file, or none yet: a temp file in the same directory renamed
//     over it; an existing file keeps its mode (and, as root, its owner);
//   - a symlink to a regular file: the file it points to, the same way; the
//     link stays a link;
//   - a character device or a FIFO (or a link to one, /dev/stdout): written
//     through, never replaced; a FIFO nobody reads fails at once;
//   - a directory, socket or block device: refused (*UnwritableError).
//
// ctx ends a write through that waits on a FIFO's reader.
func WriteOutput(ctx context.Context, name string, render func(io.Writer) error) error {
	target, info, through, err := outputTarget(name)
	if err != nil {
		return err
	}
	if through {
		return writeThrough(ctx, name, info, render)
	}
	return replaceFile(target, info, render)
}

// CheckOutput fails for a name WriteOutput would refuse (a directory, a
// socket, a dangling symlink), before anything is written.
func CheckOutput(name string) error {
	_, _, _, err := outputTarget(name)
	return err
}

// outputTarget says where name's bytes go: the path to replace and what is
// there now (nil: nothing yet), or through: write through name itself.
func outputTarget(name string) (target string, info fs.FileInfo, through bool, err error) {
	info, err = os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return name, nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if viaProcFD(name) {
			// /dev/stdout and friends: the file behind the descriptor is the
			// one the caller opened; replacing its path would lose the output.
			info, err = os.Stat(name)
			if err != nil {
				return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
			}
			return name, info, true, checkWritable(name, info)
		}
		target, err = filepath.EvalSymlinks(name)
		if errors.Is(err, fs.ErrNotExist) {
			dest, _ := os.Readlink(name)
			return "", nil, false, fmt.Errorf("writing %s: a symlink to %s, which does not exist", name, dest)
		}
		if err != nil {
			return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
		}
		if info, err = os.Lstat(target); err != nil {
			return "", nil, false, fmt.Errorf("writing %s: %w", name, err)
		}
	} else {
		target = name
	}
	if err := checkWritable(name, info); err != nil {
		return "", nil, false, err
	}
	return target, info, !info.Mode().IsRegular(), nil
}

// UnwritableError is a name that output cannot be written to: a directory,
// a socket, a block device.
type UnwritableError struct{ Name, What string }

func (e *UnwritableError) Error() string {
	return e.Name + ": " + e.What + "; name a file, a FIFO or a character device"
}

// checkWritable refuses what output cannot be written to.
func checkWritable(name string, info fs.FileInfo) error {
	mode := info.Mode()
	var what string
	switch {
	case mode.IsRegular(), mode&fs.ModeNamedPipe != 0, mode&fs.ModeCharDevice != 0:
		return nil
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a block device"
	default:
		what = "not a file fleetaudit can write (" + mode.Type().String() + ")"
	}
	return &UnwritableError{Name: name, What: what}
}

// viaProcFD reports whether name reaches its file through /proc (as
// /dev/stdout -> /proc/self/fd/1 does), following the links one by one.
func viaProcFD(name string) bool {
	p := name
	for range 40 {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return false
		}
		if dir == "/proc" || strings.HasPrefix(dir, "/proc/") {
			return true
		}
		p = filepath.Join(dir, filepath.Base(p))
		dest, err := os.Readlink(p)
		if err != nil {
			return false
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(dir, dest)
		}
		p = dest
	}
	return false
}

// writeThrough writes into name in place: a character device, a FIFO, or the
// file behind a /proc descriptor link.
func writeThrough(ctx context.Context, name string, info fs.FileInfo, render func(io.Writer) error) error {
	flags := syscall.O_WRONLY | syscall.O_CLOEXEC | syscall.O_NOCTTY | syscall.O_NONBLOCK
	if info.Mode().IsRegular() {
		flags |= syscall.O_APPEND
	}
	// O_NONBLOCK: opening a FIFO without a reader fails with ENXIO instead of
	// waiting for one, and opening a device never waits for it.
	fd, err := syscall.Open(name, flags, 0)
	if errors.Is(err, syscall.ENXIO) && info.Mode()&fs.ModeNamedPipe != 0 {
		return fmt.Errorf("writing %s: a FIFO that no process is reading; start its reader first", name)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, &fs.PathError{Op: "open", Path: name, Err: err})
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		// Writes to a device wait as usual. A FIFO stays non-blocking: Go's
		// poller then waits for the reader, and the wait can be cancelled.
		if err := syscall.SetNonblock(fd, false); err != nil {
			syscall.Close(fd)
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	f := os.NewFile(uintptr(fd), name)
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Now()) })
	defer stop()
	bw := bufio.NewWriter(f)
	err = render(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// replaceFile writes a temp file beside target and renames it over target.
// old is the file there now, nil when there is none: the new file gets its
// mode (and owner, when root may set it), else 0644 less the umask.
func replaceFile(target string, old fs.FileInfo, render func(io.Writer) error) (err error) {
	perm := fs.FileMode(0o644)
	if old != nil {
		// Created private, opened up to the old mode below: a 0600 report is
		// never readable by others, not even while it is being written.
		perm = 0o600
	}
	tmp, err := createTemp(filepath.Dir(target), filepath.Base(target), perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if old != nil {
		if err := tmp.Chmod(old.Mode().Perm()); err != nil {
			return fmt.Errorf("writing %s: %w", target, err)
		}
		if st, ok := old.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && (int(st.Uid) != 0 || int(st.Gid) != os.Getegid()) {
			if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
				return fmt.Errorf("writing %s: keeping its owner: %w", target, err)
			}
		}
	}
	bw := bufio.NewWriter(tmp)
	if err := render(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("writing %s: %w", target, err)
	}
	return nil
}

// createTemp is os.CreateTemp with a mode: the kernel applies the umask, as
// it does to any new file. The name stays within NAME_MAX however long base is.
func createTemp(dir, base string, perm fs.FileMode) (*os.File, error) {
	if len(base) > 200 {
		base = base[:200]
	}
	var err error
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36))
		var f *os.File
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, err
}
