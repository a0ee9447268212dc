package main

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's attributes: TCGETS on Linux.
const ioctlGetTermios = unix.TCGETS
