package giteatest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fatalTB records Fatal and ends its goroutine there, as testing.T does.
type fatalTB struct {
	testing.TB
	failed string
}

func (r *fatalTB) Helper() {}
func (r *fatalTB) Fatal(args ...any) {
	r.failed = fmt.Sprint(args...)
	runtime.Goexit()
}

// In CI the build runs in the background (.ci/run): Start waits while
// scripts/gitea/build.sh holds its lock, then looks for the build.
func TestStartWaitsForTheBuildInProgress(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FLEETAUDIT_GITEA", dir)
	t.Setenv("CI", "true")
	f, err := os.Create(filepath.Join(dir, ".build.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	go func() {
		time.Sleep(1500 * time.Millisecond)
		released.Store(true)
		f.Close()
	}()
	r := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(r)
	}()
	<-done
	if !released.Load() {
		t.Fatalf("Start returned while the build held its lock (failed: %q)", r.failed)
	}
	if !strings.Contains(r.failed, "no Gitea "+Version+" build in "+dir) {
		t.Errorf("after the build: %q, want the missing build", r.failed)
	}
}
