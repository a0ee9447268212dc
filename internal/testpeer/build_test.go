package testpeer

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// holdLock takes path's flock as a build script's `exec 9>lock; flock 9`
// does, until release.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return func() { f.Close() }
}

// A test waits while the peer's build holds its lock, and goes on once the
// build lets it go.
func TestWaitForBuildWaitsForTheBuildToFinish(t *testing.T) {
	lock := filepath.Join(t.TempDir(), ".build.lock")
	released := BuildInProgress(t, lock, 1500*time.Millisecond)
	if err := WaitForBuild(lock, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !released.Load() {
		t.Fatal("WaitForBuild returned while the build still held the lock")
	}
}

// A build that outlasts the deadline is an error naming the lock.
func TestWaitForBuildGivesUpAtTheDeadline(t *testing.T) {
	lock := filepath.Join(t.TempDir(), ".build.lock")
	holdLock(t, lock)
	err := WaitForBuild(lock, time.Now().Add(1500*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("err = %v, want the build not finished in time, naming %s", err, lock)
	}
}

// No lock file: no build was started, nothing to wait for (the caller then
// finds the peer missing); a lock nobody holds is a finished build.
func TestWaitForBuildWithoutABuildReturnsAtOnce(t *testing.T) {
	dir := t.TempDir()
	past := time.Now().Add(-time.Hour) // any wait would be an error
	if err := WaitForBuild(filepath.Join(dir, "absent.lock"), past); err != nil {
		t.Errorf("no lock file: %v", err)
	}
	done := filepath.Join(dir, ".build.lock")
	holdLock(t, done)()
	if err := WaitForBuild(done, past); err != nil {
		t.Errorf("released lock: %v", err)
	}
}

// The wait ends a minute before the test binary's -timeout.
func TestBuildDeadlineLeavesAMinuteOfTheTestTimeout(t *testing.T) {
	got := BuildDeadline(t, 5*time.Hour)
	if d, ok := t.Deadline(); ok {
		if !got.Equal(d.Add(-time.Minute)) {
			t.Errorf("deadline %v, want a minute before %v", got, d)
		}
	} else if got.Sub(time.Now()) < 4*time.Hour {
		t.Errorf("without -timeout: deadline %v, want about 5h from now", got)
	}
	if got := BuildDeadline(struct{}{}, time.Hour); got.Sub(time.Now()) < 59*time.Minute {
		t.Errorf("no Deadline method: %v, want an hour from now", got)
	}
}

// A second test binary's build waits while the first one's holds the lock.
func TestLockGoBuildOneAtATime(t *testing.T) {
	unlock := LockGoBuild(t)
	var released atomic.Bool
	go func() {
		time.Sleep(1500 * time.Millisecond)
		released.Store(true)
		unlock()
	}()
	LockGoBuild(t)() // a new open file description: blocks as another process would
	if !released.Load() {
		t.Fatal("the second build went ahead while the first held the lock")
	}
}
