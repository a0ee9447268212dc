package collectors

import (
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// procScan is one listing of /proc and of each process's comm, made once
// per host and shared by the families that look for a process by name
// (services, processes): a host may run a hundred thousand processes. Each
// family files the failures it depends on under its own name.
type procScan struct {
	// listErr: /proc could not be listed (a missing /proc is no error here).
	listErr error
	// procs are the numeric entries in name order, as readDir lists them.
	procs []procEntry
	// stopped: the context ended mid-scan, so procs is partial.
	stopped bool
}

// procEntry is one process: its comm, or why that could not be read.
type procEntry struct {
	pid  uint64
	name string // "/proc/<pid>/comm"
	comm string // trimmed
	// err is a read failure other than the process having gone (ENOENT,
	// or ESRCH from a dying task) or being hidden (EACCES).
	err error
	// gone: the comm was not read for one of those reasons.
	gone bool
}

// procs scans /proc on first use.
func (c *collection) procs() *procScan {
	if c.proc != nil {
		return c.proc
	}
	s := &procScan{}
	c.proc = s
	entries, err := c.src.ReadDir("proc")
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.listErr = err
		}
		return s
	}
	// readDir's order: "the first" match is the same whoever asks.
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		if c.ctx.Err() != nil {
			s.stopped = true
			return s
		}
		pid, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		p := procEntry{pid: pid, name: "/proc/" + e.Name() + "/comm"}
		data, err := readCapped(c.src, p.name, c.opts.MaxFileSize)
		switch {
		case err == nil:
			p.comm = strings.TrimSpace(string(data))
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ESRCH):
			p.gone = true
		default:
			p.err = err
		}
		s.procs = append(s.procs, p)
	}
	return s
}
