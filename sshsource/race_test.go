//go:build race

package sshsource

// raceEnabled: the race detector multiplies memory, so peak RSS is not
// asserted under it.
const raceEnabled = true
