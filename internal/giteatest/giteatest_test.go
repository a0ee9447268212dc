package giteatest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/testpeer"
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
	released := testpeer.BuildInProgress(t, filepath.Join(dir, ".build.lock"), 1500*time.Millisecond)
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
