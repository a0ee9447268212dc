//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package main

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's attributes: TIOCGETA on the BSDs and
// macOS, which have no TCGETS (the darwin/arm64 release builds this).
const ioctlGetTermios = unix.TIOCGETA
