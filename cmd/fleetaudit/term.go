package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/fleetaudit/fleetaudit/reports"
)

// Widths human output wraps to when no terminal or $COLUMNS says.
const (
	defaultWidth = 100
	minWidth     = 40
)

// humanOptions are the rendering options for output going to output ("-":
// stdout): the terminal's width when it is a terminal, else $COLUMNS, else
// defaultWidth; colour only on a terminal, and never under NO_COLOR or
// TERM=dumb.
func (a *app) humanOptions(output string) reports.Options {
	fd := -1
	if output == "-" || output == "" {
		fd = terminalFD(a.out)
	}
	width := 0
	if fd >= 0 {
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			width = int(ws.Col)
		}
	}
	if width <= 0 {
		if n, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && n > 0 {
			width = n
		}
	}
	if width <= 0 {
		width = defaultWidth
	}
	return reports.Options{
		Width: max(width, minWidth),
		Color: fd >= 0 && a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb",
	}
}

// terminalFD is w's descriptor when w is a terminal, else -1. A character
// device is not enough: /dev/null is one.
func terminalFD(w any) int {
	f, ok := w.(*os.File)
	if !ok {
		return -1
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, ioctlGetTermios); err != nil {
		return -1
	}
	return fd
}
