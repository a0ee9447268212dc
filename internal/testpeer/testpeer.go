// Package testpeer decides what a test does when a real peer it needs (a
// server, a browser, a tool) is missing. CI installs every peer, so there
// (CI=true, or the peer's own FLEETAUDIT_REQUIRE_* variable) a missing one
// fails the test; elsewhere the test skips, saying how to install it.
package testpeer

import (
	"os"
	"os/exec"
)

// TB is the part of testing.TB these helpers use, so a harness with its own
// narrower interface can pass its tb through.
type TB interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

// Required reports whether a missing peer fails instead of skipping: under
// CI=true, or when any of envs is set to a non-empty value other than "0".
func Required(envs ...string) bool {
	if os.Getenv("CI") == "true" {
		return true
	}
	for _, e := range envs {
		if v := os.Getenv(e); v != "" && v != "0" {
			return true
		}
	}
	return false
}

// Missing fails tb with msg where the peer is required, else skips it.
func Missing(tb TB, msg string, envs ...string) {
	tb.Helper()
	if Required(envs...) {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// Find returns the first of names found on PATH or, for an absolute name,
// as a regular file; where none is, it calls Missing with msg.
func Find(tb TB, msg string, names ...string) string {
	tb.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	Missing(tb, msg)
	return ""
}
