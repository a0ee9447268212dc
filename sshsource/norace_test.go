//go:build !race

package sshsource

const raceEnabled = false
