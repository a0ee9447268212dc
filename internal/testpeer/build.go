package testpeer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// WaitForBuild waits until no build holds lock, the flock(1) file a peer's
// build script (scripts/gitea/build.sh, scripts/k8s-testenv/build.sh) holds
// while it builds, so that CI can start the builds in the background and the
// tests that need them wait instead of failing. No lock file means no build
// to wait for. It gives up at deadline with an error naming the lock.
func WaitForBuild(lock string, deadline time.Time) error {
	f, err := os.Open(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("peer build lock %s: %w", lock, err)
	}
	defer f.Close()
	// Polled, not blocking, so the wait is bounded.
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("peer build lock %s: %w", lock, err)
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("peer build lock %s: still held at %s: the build did not finish in time", lock, deadline.Format(time.TimeOnly))
		}
		time.Sleep(time.Second)
	}
}

// BuildDeadline is how long a required test waits for a peer's build: until
// a minute before the test binary's -timeout where tb (a *testing.T) knows
// it, else for max.
func BuildDeadline(tb any, max time.Duration) time.Time {
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := t.Deadline(); ok {
			return d.Add(-time.Minute)
		}
	}
	return time.Now().Add(max)
}

// LockGoBuild makes the tests that build fleetaudit with the same flags
// (release, image, pre-commit hook) do so one at a time across the test
// binaries go test runs side by side: the second finds the first's packages
// in the build cache instead of compiling them again alongside. unlock ends
// the hold.
func LockGoBuild(tb TB) (unlock func()) {
	tb.Helper()
	lock := filepath.Join(os.TempDir(), "fleetaudit-test-go-build.lock")
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		tb.Fatal(fmt.Errorf("test build lock: %w", err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		tb.Fatal(fmt.Errorf("test build lock %s: %w", lock, err))
	}
	return func() { f.Close() }
}

// BuildInProgress stands in for a peer's build script in a test: it takes
// lock's flock as the script's `exec 9>lock; flock 9` does and lets it go
// after d. released reports whether it has; the lock also goes with tb's
// cleanup.
func BuildInProgress(tb HangTB, lock string, d time.Duration) (released *atomic.Bool) {
	tb.Helper()
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		tb.Fatal(err)
	}
	released = &atomic.Bool{}
	go func() {
		time.Sleep(d)
		released.Store(true)
		f.Close()
	}()
	return released
}
