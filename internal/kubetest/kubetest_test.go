package kubetest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetaudit/fleetaudit/internal/testpeer"
)

// recorder is a testing.TB that records Skip and Fatal instead of ending
// the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skip(args ...any)             { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any)            { r.failed = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }

// Without the binaries a test skips with how to build them; in CI it fails.
func TestMissingBinariesSkipOrFail(t *testing.T) {
	t.Setenv("FLEETAUDIT_K8S_BIN", t.TempDir())
	t.Setenv("FLEETAUDIT_REQUIRE_K8S", "")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		var s Server
		r := &recorder{TB: t}
		if env := s.Get(r); env != nil {
			t.Fatal("an Env without binaries")
		}
		msg := r.skipped
		if ci == "true" {
			msg = r.failed
			if r.skipped != "" {
				t.Errorf("CI=true: skipped (%s), want a failure", r.skipped)
			}
		} else if r.failed != "" {
			t.Errorf("outside CI: failed (%s), want a skip", r.failed)
		}
		if !strings.Contains(msg, "scripts/k8s-testenv/build.sh") || !strings.Contains(msg, "etcd and kube-apiserver not in") {
			t.Errorf("CI=%q: message %q", ci, msg)
		}
	}
}

// In CI the build runs in the background (.ci/run): Get waits while
// scripts/k8s-testenv/build.sh holds its lock, then looks for the binaries.
func TestGetWaitsForTheBuildInProgress(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("FLEETAUDIT_K8S_BIN", bin)
	t.Setenv("CI", "true")
	released := testpeer.BuildInProgress(t, filepath.Join(bin, ".build.lock"), 1500*time.Millisecond)
	var s Server
	r := &recorder{TB: t}
	s.Get(r)
	if !released.Load() {
		t.Fatalf("Get returned while the build held its lock (failed: %q)", r.failed)
	}
	if !strings.Contains(r.failed, "etcd and kube-apiserver not in") {
		t.Errorf("after the build: %q, want the missing binaries", r.failed)
	}
}
